//! What a symbol table lookup finds.

/// A symbol found for an address: its name and how far into it the
/// address is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit<'a> {
    /// The symbol's name.
    pub name: &'a str,
    /// Its start address (virtual address in its image, or kernel address).
    pub addr: u64,
    /// Its size in bytes (0 if unknown).
    pub size: u64,
    /// The looked-up address minus `addr`.
    pub offset: u64,
}
