//! Reading and writing a whole program: a `.bc` image or assembly text.
//! Above the program's types (`program`), the formats (`asm`, `bytecode`)
//! and the verifier, which all take a [`Program`] from below.

use crate::program::Program;

impl Program {
    /// Decodes and verifies a `.bc` image.
    pub fn load(bytes: &[u8]) -> crate::Result<Program> {
        let p = crate::bytecode::decode(bytes)?;
        crate::verify::verify(&p)?;
        Ok(p)
    }

    /// Loads either form: a `.bc` image (by its magic) or text assembly.
    pub fn load_any(bytes: &[u8]) -> crate::Result<Program> {
        if bytes.starts_with(crate::bytecode::MAGIC) {
            Program::load(bytes)
        } else {
            let text = std::str::from_utf8(bytes).map_err(|e| crate::Error::Asm {
                line: 1 + bytes[..e.valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count(),
                msg: "the file is neither toyvm bytecode (bad magic) nor UTF-8 assembly text"
                    .into(),
            })?;
            crate::asm::assemble(text)
        }
    }

    /// Encodes to a `.bc` image.
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::bytecode::encode(self)
    }
}
