//! `aci ablate`: run several configurations on the same instances and compare them.

pub mod records;
pub mod stats;
pub mod table;
