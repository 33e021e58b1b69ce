//! What the archive integration tests share.

use std::path::PathBuf;

/// A new, empty directory under the system temp dir, unique to this process and call, with an
/// empty `dest` inside; removed (with everything in it) on drop.
pub struct Scene(pub PathBuf);

impl Scene {
    pub fn new(prefix: &str) -> Scene {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir().join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("dest")).unwrap();
        Scene(root)
    }

    pub fn dest(&self) -> PathBuf {
        self.0.join("dest")
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
