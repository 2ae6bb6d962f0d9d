//! Which lists the server said changed: state the core owns, set by the
//! reader task on `notifications/…/list_changed`, read by the features that
//! cache those lists. (The tool catalog's count of changes is
//! `Shared::catalog_changes`.)

use std::sync::atomic::{AtomicBool, Ordering};

/// Which lists beside tools the server said changed.
#[derive(Debug, Default)]
pub(crate) struct Staleness {
    pub(crate) resources: AtomicBool,
    pub(crate) templates: AtomicBool,
    pub(crate) prompts: AtomicBool,
    /// The extension defines no notification of its own; skills are
    /// resources, so a change of those, or a file that failed verification
    /// (the listing may be stale), refetches them.
    pub(crate) skills: AtomicBool,
}

impl Staleness {
    /// `notifications/resources/list_changed`: resources, templates, skills.
    pub(crate) fn resources_changed(&self) {
        self.resources.store(true, Ordering::Release);
        self.templates.store(true, Ordering::Release);
        self.skills.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resources_change_marks_what_is_made_of_resources() {
        let stale = Staleness::default();
        stale.resources_changed();
        assert!(stale.resources.load(Ordering::Acquire));
        assert!(stale.templates.load(Ordering::Acquire));
        assert!(stale.skills.load(Ordering::Acquire));
        assert!(!stale.prompts.load(Ordering::Acquire));
    }
}
