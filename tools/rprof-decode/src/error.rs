//! Errors of the decoder.

use core::fmt;

/// A malformed record: where it starts in the input and what is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset of the malformed record's header in the decoded input.
    pub offset: usize,
    /// What is wrong with it.
    pub kind: DecodeErrorKind,
}

/// What is wrong with a malformed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// Fewer bytes than a record header are left.
    TruncatedHeader {
        /// Bytes left in the input.
        remaining: usize,
    },
    /// `header.size` is smaller than the header itself.
    SizeTooSmall {
        /// `header.size`.
        size: u32,
    },
    /// `header.size` is not a multiple of 8.
    SizeNotAligned {
        /// `header.size`.
        size: u32,
    },
    /// `header.size` is larger than the bytes left in the input.
    Truncated {
        /// `header.size`.
        size: u32,
        /// Bytes left in the input, header included.
        remaining: usize,
    },
    /// A known record type whose `header.size` is smaller than its structure.
    TooSmallForType {
        /// `header.type`.
        record_type: u16,
        /// `header.size`.
        size: u32,
        /// The size of the type's structure.
        min: u32,
    },
}

impl DecodeErrorKind {
    /// Whether the input merely ends inside a record, which more input can
    /// complete (a stream read in chunks), as opposed to a corrupt record.
    pub fn is_truncation(&self) -> bool {
        matches!(
            self,
            DecodeErrorKind::TruncatedHeader { .. } | DecodeErrorKind::Truncated { .. }
        )
    }
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeErrorKind::TruncatedHeader { remaining } => {
                write!(
                    f,
                    "only {remaining} bytes left, less than a record header (8)"
                )
            }
            DecodeErrorKind::SizeTooSmall { size } => {
                write!(f, "record size {size} is smaller than the header (8)")
            }
            DecodeErrorKind::SizeNotAligned { size } => {
                write!(f, "record size {size} is not a multiple of 8")
            }
            DecodeErrorKind::Truncated { size, remaining } => {
                write!(
                    f,
                    "record size {size} is larger than the {remaining} bytes left"
                )
            }
            DecodeErrorKind::TooSmallForType {
                record_type,
                size,
                min,
            } => write!(
                f,
                "record of type {record_type} has size {size}, smaller than its structure ({min})"
            ),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed record at offset {}: {}",
            self.offset, self.kind
        )
    }
}

impl std::error::Error for DecodeError {}
