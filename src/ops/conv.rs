use super::OpDef;

pub fn ops() -> Vec<&'static OpDef> {
    vec![]
}
