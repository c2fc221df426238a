//! One CFI row's rules (CFA, return address, RBP) as the few that the module follows.
//!
//! The x86-64 DWARF register numbers: RBP is 6, RSP 7, the return address
//! column (RIP) 16.  See the "Unwind tables (issue 31)" block of
//! `include/uapi/linux/rprof.h` for what each kind means to the handler.

use gimli::{CfaRule, Encoding, Format, Operation, Reader, ReaderOffset, Register, RegisterRule};
use rprof_abi::*;

/// DWARF register 6, RBP.
pub const RBP: Register = Register(6);
/// DWARF register 7, RSP.
pub const RSP: Register = Register(7);
/// DWARF register 16, the return address (RIP).
pub const RA: Register = Register(16);

/// What one row says, before it has a start: the row's fields but `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    /// `enum rprof_unwind_cfa`.
    pub cfa: u8,
    /// The CFA's offset (RSP, RBP, PLT), else 0.
    pub cfa_off: i32,
    /// `enum rprof_unwind_rbp` (RBP_SAME unless the CFA is computed).
    pub rbp: u8,
    /// The saved RBP's offset from the CFA (RBP_SAVED), else 0.
    pub rbp_off: i16,
}

impl Rule {
    /// A rule without offsets: NONE, FP or STOP.
    pub const fn bare(cfa: rprof_unwind_cfa) -> Rule {
        Rule {
            cfa: cfa as u8,
            cfa_off: 0,
            rbp: RPROF_UNWIND_RBP_SAME as u8,
            rbp_off: 0,
        }
    }

    /// No unwind information: frame pointers.
    pub const NONE: Rule = Rule::bare(RPROF_UNWIND_CFA_NONE);
    /// A rule beyond the module's: frame pointers.
    pub const FP: Rule = Rule::bare(RPROF_UNWIND_CFA_FP);
    /// The outermost frame (or a signal frame).
    pub const STOP: Rule = Rule::bare(RPROF_UNWIND_CFA_STOP);

    /// The table row with this rule from `start`.
    pub fn at(self, start: u32) -> rprof_unwind_row {
        rprof_unwind_row {
            start,
            cfa_off: self.cfa_off,
            rbp_off: self.rbp_off,
            cfa: self.cfa,
            rbp: self.rbp,
        }
    }
}

/// How a row's CFA expression reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfaExpression {
    /// The PLT stubs' `rsp + K + ((rip & 15) >= 11 ? 8 : 0)`, with K.
    Plt(i64),
    /// Anything else.
    Other,
}

/// Decodes the operations of a `DW_CFA_def_cfa_expression` and recognizes
/// the one binutils' ld writes for every x86-64 `.plt` (lazy binding, 16
/// bytes a stub, the `jmp` to the resolver from byte 11 on, after the
/// stub's `push`):
///
/// ```text
/// DW_OP_breg7 (rsp) K; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
/// DW_OP_lit11; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
/// ```
///
/// Any other program (another threshold, as in the IBT PLT's, or another
/// shape) is [`CfaExpression::Other`], as is one that does not decode.
pub fn classify_cfa_expression<R: Reader>(expr: gimli::Expression<R>) -> CfaExpression {
    let encoding = Encoding {
        address_size: 8,
        format: Format::Dwarf32,
        version: 4,
    };
    let mut ops = expr.operations(encoding);
    let mut list = Vec::with_capacity(9);
    loop {
        match ops.next() {
            Ok(Some(op)) if list.len() < 9 => list.push(op),
            Ok(None) => break,
            _ => return CfaExpression::Other,
        }
    }
    let constant = |op: &Operation<R>, want: u64| matches!(op, Operation::UnsignedConstant { value } if *value == want);
    match list.as_slice() {
        [Operation::RegisterOffset {
            register: RSP,
            offset: k,
            base_type,
        }, Operation::RegisterOffset {
            register: RA,
            offset: 0,
            base_type: base_type2,
        }, c15, Operation::And, c11, Operation::Ge, c3, Operation::Shl, Operation::Plus]
            if base_type.0.into_u64() == 0
                && base_type2.0.into_u64() == 0
                && constant(c15, 15)
                && constant(c11, 11)
                && constant(c3, 3) =>
        {
            CfaExpression::Plt(*k)
        }
        _ => CfaExpression::Other,
    }
}

/// The rule of one CFI row.
///
/// `cfa_expr` classifies the row's CFA expression, if it has one
/// ([`classify_cfa_expression`] on its bytes); `rbp_explicitly_undefined`
/// says whether RBP's rule comes from a `DW_CFA_undefined` (gimli shows an
/// unspecified register and an undefined one alike, as `Undefined`).
pub fn rule_of<T: ReaderOffset>(
    cfa: &CfaRule<T>,
    cfa_expr: impl FnOnce() -> CfaExpression,
    ra: &RegisterRule<T>,
    rbp: &RegisterRule<T>,
    rbp_explicitly_undefined: bool,
) -> Rule {
    match ra {
        RegisterRule::Offset(-8) => {}
        RegisterRule::Undefined => return Rule::STOP,
        _ => return Rule::FP,
    }
    let (kind, off) = match cfa {
        CfaRule::RegisterAndOffset { register, offset } => {
            let kind = match *register {
                RSP => RPROF_UNWIND_CFA_RSP,
                RBP => RPROF_UNWIND_CFA_RBP,
                _ => return Rule::FP,
            };
            (kind, *offset)
        }
        CfaRule::Expression(_) => match cfa_expr() {
            CfaExpression::Plt(k) => (RPROF_UNWIND_CFA_PLT, k),
            CfaExpression::Other => return Rule::FP,
        },
    };
    // The module's ranges (`table::offsets_fit`): a frame of more than
    // 16 MiB, or RBP saved anywhere but below the return address, is
    // walked by its frame pointer instead.
    let cfa_off = match i32::try_from(off) {
        Ok(o) if (8..=crate::table::CFA_OFF_MAX).contains(&o) => o,
        _ => return Rule::FP,
    };
    let (rbp, rbp_off) = match rbp {
        RegisterRule::Offset(n) => match i16::try_from(*n) {
            Ok(n) if n % 8 == 0 && n <= -16 => (RPROF_UNWIND_RBP_SAVED, n),
            _ => return Rule::FP,
        },
        RegisterRule::SameValue => (RPROF_UNWIND_RBP_SAME, 0),
        RegisterRule::Undefined if rbp_explicitly_undefined => (RPROF_UNWIND_RBP_UNDEF, 0),
        RegisterRule::Undefined => (RPROF_UNWIND_RBP_SAME, 0),
        _ => return Rule::FP,
    };
    Rule {
        cfa: kind as u8,
        cfa_off,
        rbp: rbp as u8,
        rbp_off,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::{EndianSlice, LittleEndian};

    fn expr(bytes: &[u8]) -> gimli::Expression<EndianSlice<'_, LittleEndian>> {
        gimli::Expression(EndianSlice::new(bytes, LittleEndian))
    }

    /// The bytes of binutils' .plt CFA expression with K = `k` (one-byte
    /// SLEB128).
    fn plt(k: u8, threshold_op: u8) -> Vec<u8> {
        vec![
            0x77,
            k, // DW_OP_breg7 k
            0x80,
            0x00, // DW_OP_breg16 0
            0x3f, // DW_OP_lit15
            0x1a, // DW_OP_and
            threshold_op,
            0x2a, // DW_OP_ge
            0x33, // DW_OP_lit3
            0x24, // DW_OP_shl
            0x22, // DW_OP_plus
        ]
    }

    #[test]
    fn the_plt_expression_and_its_near_misses() {
        const LIT11: u8 = 0x3b;
        assert_eq!(
            classify_cfa_expression(expr(&plt(8, LIT11))),
            CfaExpression::Plt(8)
        );
        assert_eq!(
            classify_cfa_expression(expr(&plt(16, LIT11))),
            CfaExpression::Plt(16)
        );
        // The IBT PLT's threshold, 10: not what the module computes.
        assert_eq!(
            classify_cfa_expression(expr(&plt(8, 0x3a))),
            CfaExpression::Other
        );
        // DW_OP_const1u 11 instead of DW_OP_lit11 means the same.
        let mut long = plt(8, 0x08);
        long.insert(7, 11);
        assert_eq!(classify_cfa_expression(expr(&long)), CfaExpression::Plt(8));
        // One more operation, one fewer, a cut, another base register.
        let mut more = plt(8, LIT11);
        more.push(0x06); // DW_OP_deref
        assert_eq!(classify_cfa_expression(expr(&more)), CfaExpression::Other);
        let p = plt(8, LIT11);
        assert_eq!(
            classify_cfa_expression(expr(&p[..p.len() - 1])),
            CfaExpression::Other
        );
        assert_eq!(classify_cfa_expression(expr(&p[..1])), CfaExpression::Other);
        let mut rbp = plt(8, LIT11);
        rbp[0] = 0x76;
        assert_eq!(classify_cfa_expression(expr(&rbp)), CfaExpression::Other);
        // The signal frame's `DW_OP_breg7 160; DW_OP_deref`.
        assert_eq!(
            classify_cfa_expression(expr(&[0x77, 0xa0, 0x01, 0x06])),
            CfaExpression::Other
        );
    }

    type Cfa = CfaRule<usize>;
    type Reg = RegisterRule<usize>;

    fn rsp(offset: i64) -> Cfa {
        CfaRule::RegisterAndOffset {
            register: RSP,
            offset,
        }
    }

    fn rule(cfa: Cfa, ra: Reg, rbp: Reg) -> Rule {
        rule_of(&cfa, || CfaExpression::Other, &ra, &rbp, false)
    }

    #[test]
    fn the_rules() {
        let ra = RegisterRule::Offset(-8);
        let r = rule(rsp(16), ra.clone(), RegisterRule::Offset(-16));
        assert_eq!(r.at(1), {
            rprof_unwind_row {
                start: 1,
                cfa_off: 16,
                rbp_off: -16,
                cfa: RPROF_UNWIND_CFA_RSP as u8,
                rbp: RPROF_UNWIND_RBP_SAVED as u8,
            }
        });
        let by_rbp = CfaRule::RegisterAndOffset {
            register: RBP,
            offset: 16,
        };
        assert_eq!(
            rule(by_rbp, ra.clone(), RegisterRule::SameValue).cfa,
            RPROF_UNWIND_CFA_RBP as u8
        );
        let by_rdi = CfaRule::RegisterAndOffset {
            register: Register(5),
            offset: 8,
        };
        assert_eq!(rule(by_rdi, ra.clone(), RegisterRule::Undefined), Rule::FP);
        assert_eq!(
            rule(rsp(1 << 31), ra.clone(), RegisterRule::Undefined),
            Rule::FP
        );
        // Outside the module's ranges (table::offsets_fit): the frame
        // pointer's turn.
        for off in [-(1 << 31), -8, 0, 7, (1 << 24) + 1] {
            assert_eq!(rule(rsp(off), ra.clone(), RegisterRule::Undefined), Rule::FP, "{off}");
        }
        assert_eq!(rule(rsp(1 << 24), ra.clone(), RegisterRule::Undefined).cfa_off, 1 << 24);
        for off in [-8, 0, 16] {
            assert_eq!(rule(rsp(16), ra.clone(), RegisterRule::Offset(off)), Rule::FP, "{off}");
        }

        // The return address.
        assert_eq!(
            rule(rsp(8), RegisterRule::Undefined, RegisterRule::Undefined),
            Rule::STOP
        );
        assert_eq!(
            rule(rsp(8), RegisterRule::Offset(-16), RegisterRule::Undefined),
            Rule::FP
        );
        assert_eq!(
            rule(rsp(8), RegisterRule::SameValue, RegisterRule::Undefined),
            Rule::FP
        );

        // RBP: unspecified or same, undefined, saved (multiple of 8, i16).
        let same = rule(rsp(8), ra.clone(), RegisterRule::Undefined);
        assert_eq!((same.rbp, same.rbp_off), (RPROF_UNWIND_RBP_SAME as u8, 0));
        assert_eq!(same, rule(rsp(8), ra.clone(), RegisterRule::SameValue));
        let undef = rule_of(
            &rsp(8),
            || CfaExpression::Other,
            &ra,
            &RegisterRule::Undefined,
            true,
        );
        assert_eq!(undef.rbp, RPROF_UNWIND_RBP_UNDEF as u8);
        assert_eq!(
            rule(rsp(8), ra.clone(), RegisterRule::Offset(-12)),
            Rule::FP
        );
        assert_eq!(
            rule(rsp(8), ra.clone(), RegisterRule::Offset(1 << 15)),
            Rule::FP
        );
        assert_eq!(
            rule(rsp(8), ra.clone(), RegisterRule::Offset(-(1 << 15))).rbp_off,
            i16::MIN
        );
        assert_eq!(
            rule(rsp(8), ra.clone(), RegisterRule::Register(Register(9))),
            Rule::FP
        );
        assert_eq!(
            rule(rsp(8), ra.clone(), RegisterRule::ValOffset(-16)),
            Rule::FP
        );

        // Expressions: the PLT's, or frame pointers.
        let e = CfaRule::Expression(gimli::UnwindExpression {
            offset: 0,
            length: 0,
        });
        assert_eq!(
            rule(e.clone(), ra.clone(), RegisterRule::Undefined),
            Rule::FP
        );
        let plt = rule_of(
            &e,
            || CfaExpression::Plt(8),
            &ra,
            &RegisterRule::Undefined,
            false,
        );
        assert_eq!((plt.cfa, plt.cfa_off), (RPROF_UNWIND_CFA_PLT as u8, 8));
    }
}
