//! The seven tools' shared conventions (the tools themselves land with issue 4).

pub mod conventions;
