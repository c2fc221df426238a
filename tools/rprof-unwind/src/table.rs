//! A compiled unwind table: rows by file offset, the bytes of its file format, and their validation.
//!
//! The format is `struct rprof_unwind_table_header` followed by `nr_rows`
//! `struct rprof_unwind_row`s, every field little endian, as
//! `include/uapi/linux/rprof.h` defines them.  [`validate`] makes the checks
//! the module will make when a table is uploaded; [`UnwindTable::from_bytes`]
//! runs them before it trusts anything a file says.

use rprof_abi::{
    RPROF_UNWIND_CFA_PLT, RPROF_UNWIND_CFA_RBP, RPROF_UNWIND_CFA_RSP, RPROF_UNWIND_CFA_STOP, RPROF_UNWIND_MAGIC, RPROF_UNWIND_RBP_SAME, RPROF_UNWIND_RBP_SAVED, RPROF_UNWIND_RBP_UNDEF, RPROF_UNWIND_VERSION, rprof_unwind_row, rprof_unwind_table_header,
};
use std::fmt;

/// `sizeof(struct rprof_unwind_table_header)`.
pub const HEADER_SIZE: usize = core::mem::size_of::<rprof_unwind_table_header>();
/// `sizeof(struct rprof_unwind_row)`.
pub const ROW_SIZE: usize = core::mem::size_of::<rprof_unwind_row>();
/// The room for a build-id in the header.
pub const BUILD_ID_MAX: usize = 20;

// The serializer below writes the fields one by one; a header change that
// moves them must come here too.
const _: () = assert!(HEADER_SIZE == 40 && ROW_SIZE == 12);

/// One row of a table: the generated `struct rprof_unwind_row`.
pub type Row = rprof_unwind_row;

/// Why bytes are not a valid table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// Fewer bytes than a header.
    Truncated {
        /// The number of bytes.
        len: usize,
    },
    /// The magic is not `RPROF_UNWIND_MAGIC`.
    BadMagic(u32),
    /// A version this build does not read.
    BadVersion(u32),
    /// `build_id_len` is more than the header holds, or the padding after
    /// the build-id is not zero.
    BadBuildId {
        /// The length the header says.
        len: u32,
    },
    /// The length does not match `nr_rows` (too short, or bytes after the
    /// last row).
    BadLength {
        /// `nr_rows` from the header.
        nr_rows: u32,
        /// The number of bytes.
        len: usize,
    },
    /// A row's start is not above the previous row's.
    Unsorted {
        /// The row's index.
        index: usize,
        /// The previous row's start.
        prev: u32,
        /// This row's start.
        start: u32,
    },
    /// A row's `cfa` is not an `enum rprof_unwind_cfa`.
    BadCfa {
        /// The row's index.
        index: usize,
        /// The value.
        cfa: u8,
    },
    /// A row's `rbp` is not an `enum rprof_unwind_rbp`.
    BadRbp {
        /// The row's index.
        index: usize,
        /// The value.
        rbp: u8,
    },
    /// A row's `rbp_off` is not a multiple of 8.
    BadRbpOffset {
        /// The row's index.
        index: usize,
        /// The value.
        rbp_off: i16,
    },
    /// A row's offsets are outside what the module takes for its rule:
    /// RSP, RBP and PLT rows need 8 <= cfa_off <= 2^24, and rbp_off 0
    /// unless RBP_SAVED (then at most -16); NONE, FP and STOP rows need
    /// RBP_SAME and both offsets 0.
    BadOffsets {
        /// The row's index.
        index: usize,
    },
    /// More rows than the module takes (2^24).
    TooManyRows(u32),
    /// The last row does not start below the table's `end`.
    BadEnd {
        /// The last row's start.
        last: u32,
        /// The header's end.
        end: u32,
    },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FormatError::Truncated { len } => {
                write!(f, "{len} bytes, fewer than a {HEADER_SIZE}-byte header")
            }
            FormatError::BadMagic(m) => write!(
                f,
                "magic {m:#010x}, expected {RPROF_UNWIND_MAGIC:#010x} (\"RPUW\")"
            ),
            FormatError::BadVersion(v) => {
                write!(f, "version {v}, this build reads {RPROF_UNWIND_VERSION}")
            }
            FormatError::BadBuildId { len } => write!(
                f,
                "build_id_len {len} (at most {BUILD_ID_MAX}, zero padding after it)"
            ),
            FormatError::BadLength { nr_rows, len } => write!(
                f,
                "{len} bytes do not hold a header and {nr_rows} rows of {ROW_SIZE} bytes"
            ),
            FormatError::Unsorted { index, prev, start } => write!(
                f,
                "row {index} starts at {start:#x}, not above the previous row's {prev:#x}"
            ),
            FormatError::BadCfa { index, cfa } => write!(f, "row {index}: cfa {cfa} out of range"),
            FormatError::BadRbp { index, rbp } => write!(f, "row {index}: rbp {rbp} out of range"),
            FormatError::BadRbpOffset { index, rbp_off } => {
                write!(f, "row {index}: rbp_off {rbp_off} is not a multiple of 8")
            }
            FormatError::BadOffsets { index } => {
                write!(f, "row {index}: offsets the module refuses for its rule")
            }
            FormatError::TooManyRows(n) => write!(f, "{n} rows, more than the module takes ({ROWS_MAX})"),
            FormatError::BadEnd { last, end } => write!(
                f,
                "the last row starts at {last:#x}, not below the table's end {end:#x}"
            ),
        }
    }
}

impl std::error::Error for FormatError {}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut v = [0; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn row_at(b: &[u8], index: usize) -> Row {
    let r = &b[HEADER_SIZE + index * ROW_SIZE..][..ROW_SIZE];
    Row {
        start: u32_at(r, 0),
        cfa_off: u32_at(r, 4) as i32,
        rbp_off: i16::from_le_bytes([r[8], r[9]]),
        cfa: r[10],
        rbp: r[11],
    }
}

fn header_of(b: &[u8]) -> rprof_unwind_table_header {
    let mut build_id = [0; BUILD_ID_MAX];
    build_id.copy_from_slice(&b[16..36]);
    rprof_unwind_table_header {
        magic: u32_at(b, 0),
        version: u32_at(b, 4),
        nr_rows: u32_at(b, 8),
        end: u32_at(b, 12),
        build_id,
        build_id_len: u32_at(b, 36),
    }
}

/// The most rows the module takes in one table.
pub const ROWS_MAX: u32 = 1 << 24;

/// The largest CFA offset the module takes.
pub const CFA_OFF_MAX: i32 = 1 << 24;

/// Whether `r`'s offsets are the module's for its rule (the kernel's
/// `validate_row`, `src/chains/unwind.rs`); cfa and rbp in range.
pub fn offsets_fit(r: &rprof_unwind_row) -> bool {
    match u32::from(r.cfa) {
        RPROF_UNWIND_CFA_RSP | RPROF_UNWIND_CFA_RBP | RPROF_UNWIND_CFA_PLT => {
            (8..=CFA_OFF_MAX).contains(&r.cfa_off)
                && match u32::from(r.rbp) {
                    RPROF_UNWIND_RBP_SAVED => r.rbp_off <= -16 && r.rbp_off % 8 == 0,
                    _ => r.rbp_off == 0,
                }
        }
        _ => u32::from(r.rbp) == RPROF_UNWIND_RBP_SAME && r.cfa_off == 0 && r.rbp_off == 0,
    }
}

/// Checks that `bytes` are a table as the module accepts one: the magic and
/// version, a length of exactly a header and `nr_rows` rows, a build-id
/// within its room and zero-padded, strictly increasing row starts below
/// `end`, `cfa` and `rbp` within their enums, and each row's offsets those of its rule (`offsets_fit`); at most
/// `ROWS_MAX` rows.  (The module also refuses a table of no rows, which the
/// uploader never sends.)
///
/// Returns the header.  Never panics, whatever the bytes.
pub fn validate(bytes: &[u8]) -> Result<rprof_unwind_table_header, FormatError> {
    if bytes.len() < HEADER_SIZE {
        return Err(FormatError::Truncated { len: bytes.len() });
    }
    let h = header_of(bytes);
    if h.magic != RPROF_UNWIND_MAGIC {
        return Err(FormatError::BadMagic(h.magic));
    }
    if h.version != RPROF_UNWIND_VERSION {
        return Err(FormatError::BadVersion(h.version));
    }
    let id_len = h.build_id_len as usize;
    if id_len > BUILD_ID_MAX
        || h.build_id[id_len.min(BUILD_ID_MAX)..]
            .iter()
            .any(|&b| b != 0)
    {
        return Err(FormatError::BadBuildId {
            len: h.build_id_len,
        });
    }
    if h.nr_rows > ROWS_MAX {
        return Err(FormatError::TooManyRows(h.nr_rows));
    }
    // In u64: nr_rows * ROW_SIZE cannot overflow, whatever nr_rows says.
    let want = HEADER_SIZE as u64 + u64::from(h.nr_rows) * ROW_SIZE as u64;
    if want != bytes.len() as u64 {
        return Err(FormatError::BadLength {
            nr_rows: h.nr_rows,
            len: bytes.len(),
        });
    }
    let mut prev: Option<u32> = None;
    for index in 0..h.nr_rows as usize {
        let r = row_at(bytes, index);
        if let Some(prev) = prev {
            if r.start <= prev {
                return Err(FormatError::Unsorted {
                    index,
                    prev,
                    start: r.start,
                });
            }
        }
        if u32::from(r.cfa) > RPROF_UNWIND_CFA_STOP {
            return Err(FormatError::BadCfa { index, cfa: r.cfa });
        }
        if u32::from(r.rbp) > RPROF_UNWIND_RBP_UNDEF {
            return Err(FormatError::BadRbp { index, rbp: r.rbp });
        }
        if r.rbp_off % 8 != 0 {
            return Err(FormatError::BadRbpOffset {
                index,
                rbp_off: r.rbp_off,
            });
        }
        if !offsets_fit(&r) {
            return Err(FormatError::BadOffsets { index });
        }
        prev = Some(r.start);
    }
    if let Some(last) = prev {
        if last >= h.end {
            return Err(FormatError::BadEnd { last, end: h.end });
        }
    }
    Ok(h)
}

/// An unwind table: rows sorted by file offset, each covering up to the next
/// row's start (the last up to `end`), for the file with `build_id`.
///
/// # Examples
///
/// ```
/// use rprof_unwind::{Row, UnwindTable};
/// use rprof_abi::{RPROF_UNWIND_CFA_RSP, RPROF_UNWIND_RBP_SAME};
///
/// let row = |start, cfa_off| Row {
///     start,
///     cfa_off,
///     rbp_off: 0,
///     cfa: RPROF_UNWIND_CFA_RSP as u8,
///     rbp: RPROF_UNWIND_RBP_SAME as u8,
/// };
/// let table = UnwindTable {
///     rows: vec![row(0x1000, 8), row(0x1004, 16)],
///     end: 0x1010,
///     build_id: vec![0xab; 20],
/// };
/// let bytes = table.to_bytes().unwrap();
/// let back = UnwindTable::from_bytes(&bytes).unwrap();
/// assert_eq!(back, table);
/// assert_eq!(back.row_for(0x1006).unwrap().cfa_off, 16);
/// assert!(back.row_for(0x1010).is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnwindTable {
    /// The rows, strictly increasing by `start`.
    pub rows: Vec<Row>,
    /// The file offset past the last row's range.
    pub end: u32,
    /// The file's GNU build-id (at most [`BUILD_ID_MAX`] bytes), empty if
    /// it has none.
    pub build_id: Vec<u8>,
}

impl UnwindTable {
    /// The row that covers file offset `offset`, if any.
    pub fn row_for(&self, offset: u32) -> Option<&Row> {
        if offset >= self.end {
            return None;
        }
        let after = self.rows.partition_point(|r| r.start <= offset);
        after.checked_sub(1).map(|i| &self.rows[i])
    }

    /// The table in its file format.
    ///
    /// Fails (and writes nothing a reader would accept) if the table is not
    /// valid: the bytes are checked with [`validate`] before they are
    /// returned.
    pub fn to_bytes(&self) -> Result<Vec<u8>, FormatError> {
        let len = self.build_id.len();
        if len > BUILD_ID_MAX {
            return Err(FormatError::BadBuildId { len: len as u32 });
        }
        let nr_rows = u32::try_from(self.rows.len()).map_err(|_| FormatError::BadLength {
            nr_rows: u32::MAX,
            len: self.rows.len(),
        })?;
        let mut b = Vec::with_capacity(HEADER_SIZE + self.rows.len() * ROW_SIZE);
        b.extend_from_slice(&RPROF_UNWIND_MAGIC.to_le_bytes());
        b.extend_from_slice(&RPROF_UNWIND_VERSION.to_le_bytes());
        b.extend_from_slice(&nr_rows.to_le_bytes());
        b.extend_from_slice(&self.end.to_le_bytes());
        let mut id = [0; BUILD_ID_MAX];
        id[..len].copy_from_slice(&self.build_id);
        b.extend_from_slice(&id);
        b.extend_from_slice(&(len as u32).to_le_bytes());
        for r in &self.rows {
            b.extend_from_slice(&r.start.to_le_bytes());
            b.extend_from_slice(&r.cfa_off.to_le_bytes());
            b.extend_from_slice(&r.rbp_off.to_le_bytes());
            b.push(r.cfa);
            b.push(r.rbp);
        }
        validate(&b)?;
        Ok(b)
    }

    /// Reads a table from its file format, after [`validate`].
    pub fn from_bytes(bytes: &[u8]) -> Result<UnwindTable, FormatError> {
        let h = validate(bytes)?;
        Ok(UnwindTable {
            rows: (0..h.nr_rows as usize).map(|i| row_at(bytes, i)).collect(),
            end: h.end,
            build_id: h.build_id[..h.build_id_len as usize].to_vec(),
        })
    }

    /// The size of the table in its file format.
    pub fn byte_len(&self) -> usize {
        HEADER_SIZE + self.rows.len() * ROW_SIZE
    }
}

/// Shows a row as `0x1234 cfa=rsp+16 rbp=cfa-16` (the dump's line).
pub struct RowDisplay<'a>(pub &'a Row);

impl fmt::Display for RowDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use rprof_abi::*;
        let r = self.0;
        write!(f, "{:#x} ", r.start)?;
        let (base, rbp) = match u32::from(r.cfa) {
            RPROF_UNWIND_CFA_NONE => return f.write_str("cfa=none"),
            RPROF_UNWIND_CFA_FP => return f.write_str("cfa=fp"),
            RPROF_UNWIND_CFA_STOP => return f.write_str("cfa=stop"),
            RPROF_UNWIND_CFA_RSP => ("rsp", r.rbp),
            RPROF_UNWIND_CFA_RBP => ("rbp", r.rbp),
            RPROF_UNWIND_CFA_PLT => ("plt", r.rbp),
            other => return write!(f, "cfa=?{other}"),
        };
        write!(f, "cfa={base}{:+}", r.cfa_off)?;
        match u32::from(rbp) {
            RPROF_UNWIND_RBP_SAME => f.write_str(" rbp=same"),
            RPROF_UNWIND_RBP_SAVED => write!(f, " rbp=cfa{:+}", r.rbp_off),
            RPROF_UNWIND_RBP_UNDEF => f.write_str(" rbp=undef"),
            other => write!(f, " rbp=?{other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof_abi::*;

    fn row(start: u32, cfa: u32, cfa_off: i32, rbp: u32, rbp_off: i16) -> Row {
        Row {
            start,
            cfa_off,
            rbp_off,
            cfa: cfa as u8,
            rbp: rbp as u8,
        }
    }

    fn sample() -> UnwindTable {
        UnwindTable {
            rows: vec![
                row(0x10, RPROF_UNWIND_CFA_RSP, 8, RPROF_UNWIND_RBP_SAME, 0),
                row(0x11, RPROF_UNWIND_CFA_RSP, 16, RPROF_UNWIND_RBP_SAVED, -16),
                row(0x14, RPROF_UNWIND_CFA_RBP, 16, RPROF_UNWIND_RBP_SAVED, -16),
                row(0x30, RPROF_UNWIND_CFA_NONE, 0, RPROF_UNWIND_RBP_SAME, 0),
                row(0x40, RPROF_UNWIND_CFA_PLT, 8, RPROF_UNWIND_RBP_SAME, 0),
                row(0x50, RPROF_UNWIND_CFA_STOP, 0, RPROF_UNWIND_RBP_SAME, 0),
            ],
            end: 0x60,
            build_id: vec![1, 2, 3, 4],
        }
    }

    /// Writes `v` at byte `at` of `b` (a field of a test's table).
    fn put(b: &mut [u8], at: usize, v: &[u8]) {
        b[at..at + v.len()].copy_from_slice(v);
    }

    #[test]
    fn round_trip() {
        let t = sample();
        let b = t.to_bytes().unwrap();
        assert_eq!(b.len(), t.byte_len());
        assert_eq!(b.len(), HEADER_SIZE + 6 * ROW_SIZE);
        assert_eq!(
            &b[..4],
            b"WUPR",
            "the magic is \"RPUW\" as a little-endian u32"
        );
        assert_eq!(UnwindTable::from_bytes(&b).unwrap(), t);
        let empty = UnwindTable::default();
        assert_eq!(
            UnwindTable::from_bytes(&empty.to_bytes().unwrap()).unwrap(),
            empty
        );
    }

    #[test]
    fn lookup() {
        let t = sample();
        assert_eq!(t.row_for(0), None);
        assert_eq!(t.row_for(0xf), None);
        assert_eq!(t.row_for(0x10).unwrap().start, 0x10);
        assert_eq!(t.row_for(0x13).unwrap().start, 0x11);
        assert_eq!(t.row_for(0x2f).unwrap().start, 0x14);
        assert_eq!(t.row_for(0x5f).unwrap().start, 0x50);
        assert_eq!(t.row_for(0x60), None);
        assert_eq!(t.row_for(u32::MAX), None);
        assert_eq!(UnwindTable::default().row_for(0), None);
    }

    #[test]
    fn display() {
        let t = sample();
        let lines: Vec<String> = t.rows.iter().map(|r| RowDisplay(r).to_string()).collect();
        assert_eq!(
            lines,
            [
                "0x10 cfa=rsp+8 rbp=same",
                "0x11 cfa=rsp+16 rbp=cfa-16",
                "0x14 cfa=rbp+16 rbp=cfa-16",
                "0x30 cfa=none",
                "0x40 cfa=plt+8 rbp=same",
                "0x50 cfa=stop",
            ]
        );
    }

    #[test]
    fn validate_rejects_each_defect() {
        let good = sample().to_bytes().unwrap();
        assert!(validate(&good).is_ok());
        let row0 = HEADER_SIZE;
        let row1 = HEADER_SIZE + ROW_SIZE;

        for len in [0, 1, HEADER_SIZE - 1] {
            assert_eq!(validate(&good[..len]), Err(FormatError::Truncated { len }));
        }
        // A cut inside the rows, or a byte too many.
        let cut = &good[..good.len() - 1];
        assert_eq!(
            validate(cut),
            Err(FormatError::BadLength {
                nr_rows: 6,
                len: cut.len()
            })
        );
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(
            validate(&long),
            Err(FormatError::BadLength { .. })
        ));

        let mut b = good.clone();
        put(&mut b, 0, b"RPUW");
        assert!(matches!(validate(&b), Err(FormatError::BadMagic(_))));

        let mut b = good.clone();
        put(&mut b, 4, &2u32.to_le_bytes());
        assert_eq!(validate(&b), Err(FormatError::BadVersion(2)));

        // nr_rows far beyond the bytes: an error, not an allocation; past
        // the module's most, that first.
        for n in [7u32, ROWS_MAX, ROWS_MAX + 1, 0x1555_5555, u32::MAX] {
            let mut b = good.clone();
            put(&mut b, 8, &n.to_le_bytes());
            let e = validate(&b);
            assert!(
                match e {
                    Err(FormatError::BadLength { nr_rows, .. }) => nr_rows == n && n <= ROWS_MAX,
                    Err(FormatError::TooManyRows(m)) => m == n && n > ROWS_MAX,
                    _ => false,
                },
                "nr_rows {n}: {e:?}"
            );
            assert!(UnwindTable::from_bytes(&b).is_err());
        }

        // Each row's offsets as the module takes them for its rule.
        let cases: [(u8, i32, u8, i16); 7] = [
            (RPROF_UNWIND_CFA_RSP as u8, 0, RPROF_UNWIND_RBP_SAME as u8, 0),
            (RPROF_UNWIND_CFA_RSP as u8, CFA_OFF_MAX + 1, RPROF_UNWIND_RBP_SAME as u8, 0),
            (RPROF_UNWIND_CFA_RSP as u8, 16, RPROF_UNWIND_RBP_SAVED as u8, -8),
            (RPROF_UNWIND_CFA_RSP as u8, 16, RPROF_UNWIND_RBP_SAME as u8, -16),
            (RPROF_UNWIND_CFA_NONE as u8, 8, RPROF_UNWIND_RBP_SAME as u8, 0),
            (RPROF_UNWIND_CFA_STOP as u8, 0, RPROF_UNWIND_RBP_UNDEF as u8, 0),
            (RPROF_UNWIND_CFA_FP as u8, 0, RPROF_UNWIND_RBP_SAME as u8, -16),
        ];
        for (cfa, cfa_off, rbp, rbp_off) in cases {
            let mut b = good.clone();
            put(&mut b, row0 + 4, &cfa_off.to_le_bytes());
            put(&mut b, row0 + 8, &rbp_off.to_le_bytes());
            b[row0 + 10] = cfa;
            b[row0 + 11] = rbp;
            assert_eq!(validate(&b), Err(FormatError::BadOffsets { index: 0 }), "{cfa} {cfa_off} {rbp} {rbp_off}");
        }

        let mut b = good.clone();
        put(&mut b, 12, &0x50u32.to_le_bytes());
        assert_eq!(
            validate(&b),
            Err(FormatError::BadEnd {
                last: 0x50,
                end: 0x50
            })
        );

        let mut b = good.clone();
        put(&mut b, 36, &21u32.to_le_bytes());
        assert_eq!(validate(&b), Err(FormatError::BadBuildId { len: 21 }));
        let mut b = good.clone();
        b[16 + 19] = 1; // after the 4-byte build-id: must be zero
        assert_eq!(validate(&b), Err(FormatError::BadBuildId { len: 4 }));

        // Row 1 starting at row 0's start, then below it.
        for start in [0x10u32, 0x0f] {
            let mut b = good.clone();
            put(&mut b, row1, &start.to_le_bytes());
            assert_eq!(
                validate(&b),
                Err(FormatError::Unsorted {
                    index: 1,
                    prev: 0x10,
                    start
                })
            );
        }

        let mut b = good.clone();
        b[row0 + 10] = RPROF_UNWIND_CFA_STOP as u8 + 1;
        assert_eq!(
            validate(&b),
            Err(FormatError::BadCfa {
                index: 0,
                cfa: RPROF_UNWIND_CFA_STOP as u8 + 1
            })
        );
        let mut b = good.clone();
        b[row1 + 11] = 0xff;
        assert_eq!(
            validate(&b),
            Err(FormatError::BadRbp {
                index: 1,
                rbp: 0xff
            })
        );
        let mut b = good.clone();
        put(&mut b, row1 + 8, &(-12i16).to_le_bytes());
        assert_eq!(
            validate(&b),
            Err(FormatError::BadRbpOffset {
                index: 1,
                rbp_off: -12
            })
        );

        // Every error says what it found.
        assert!(validate(&good[..3])
            .unwrap_err()
            .to_string()
            .contains("3 bytes"));
    }

    #[test]
    fn to_bytes_refuses_an_invalid_table() {
        let mut t = sample();
        t.rows.swap(0, 1);
        assert!(matches!(t.to_bytes(), Err(FormatError::Unsorted { .. })));
        let mut t = sample();
        t.build_id = vec![0; 21];
        assert!(t.to_bytes().is_err());
    }

    use crate::testrng::XorShift;

    #[test]
    fn random_bytes_never_panic_and_what_passes_round_trips() {
        let good = sample().to_bytes().unwrap();
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut accepted = 0;
        for i in 0..20_000 {
            let b: Vec<u8> = if i % 2 == 0 {
                // Pure noise, sometimes behind a valid magic and version.
                let len = (rng.next() % 120) as usize;
                let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                if i % 4 == 0 && b.len() >= 8 {
                    put(&mut b, 0, &good[..8]);
                }
                b
            } else {
                // A valid table with a few bytes flipped, maybe cut.
                let mut b = good.clone();
                for _ in 0..1 + rng.next() % 3 {
                    let at = (rng.next() as usize) % b.len();
                    b[at] ^= 1 << (rng.next() % 8);
                }
                if rng.next() % 4 == 0 {
                    b.truncate((rng.next() as usize) % b.len());
                }
                b
            };
            if let Ok(t) = UnwindTable::from_bytes(&b) {
                accepted += 1;
                // Whatever was accepted is a table that writes back the same.
                assert_eq!(t.to_bytes().unwrap(), b);
                for w in t.rows.windows(2) {
                    assert!(w[0].start < w[1].start);
                }
            }
        }
        // Flips of padding bits (in cfa_off, a start that stays sorted...)
        // still make tables; pure noise does not.
        assert!(accepted > 0 && accepted < 10_000, "accepted {accepted}");
    }
}
