//! (stub)
pub struct SkillError;
pub fn find_skill() {}
pub fn load_skill_dir() {}
