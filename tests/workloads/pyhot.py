# A hot Python loop for the unwind tests (48-unwind.sh): Debian's python3
# runs it, a binary built -O2 without frame pointers, so every native
# chain from the interpreter's eval loop (_PyEval_EvalFrameDefault) down
# to main is found by unwind tables or not at all.
# Usage: python3 -S pyhot.py SECONDS
import sys
import time


def hot(n):
    s = 0
    for i in range(n):
        s = (s * 31 + i) & 0xFFFFFFFF
    return s


def main():
    end = time.monotonic() + float(sys.argv[1])
    rounds = 0
    while time.monotonic() < end:
        hot(20000)
        rounds += 1
    print("pyhot: %d rounds" % rounds)


main()
