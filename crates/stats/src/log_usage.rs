//! The usage of a container's log directory as upstream measures it
//! (`host_stats_provider.go` `fileMetricsByDir` + `metricsByPathToFsStats`): each entry of the
//! directory that is not a directory is one `MetricsDu` (`pkg/volume/util/fs` `DiskUsage`:
//! `Stat` of the path for its device, then the `Lstat` of the walk: `st_blocks × 512` bytes
//! and one inode, nothing when on another device or gone meanwhile); the directory itself
//! and its subdirectories are not counted. One listing of the directory and an `fstatat`
//! per entry relative to it (`DirEntry::metadata`), no path walk per file.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::fs::DirUsage;

/// See the module doc: `None` when the directory holds no file.
pub(crate) fn files_usage(dir: &Path) -> std::io::Result<Option<DirUsage>> {
    let mut usage: Option<DirUsage> = None;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            continue;
        }
        let u = usage.get_or_insert_with(DirUsage::default);
        let st = if kind.is_symlink() {
            // `DiskUsage`'s `Stat` follows the link (an error fails the directory, as
            // upstream's); the walk's `Lstat` counts the link itself.
            let top = std::fs::metadata(entry.path())?;
            match entry.metadata() {
                Ok(st) if st.dev() == top.dev() => st,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
        } else {
            entry.metadata()?
        };
        u.bytes += st.blocks() * 512;
        u.inodes += 1;
    }
    Ok(usage)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn files_only_the_directory_and_subdirectories_not_counted() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(files_usage(d.path()).unwrap(), None, "no file: no usage");
        std::fs::write(d.path().join("0.log"), vec![1u8; 10_000]).unwrap();
        std::fs::write(d.path().join("1.log"), b"x").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/big"), vec![1u8; 100_000]).unwrap();
        std::os::unix::fs::symlink("0.log", d.path().join("link")).unwrap();
        let u = files_usage(d.path()).unwrap().unwrap();
        assert_eq!(u.inodes, 3, "two files and the link: {u:?}");
        let blocks = |p: &str| {
            use std::os::unix::fs::MetadataExt;
            std::fs::symlink_metadata(d.path().join(p))
                .unwrap()
                .blocks()
                * 512
        };
        assert_eq!(u.bytes, blocks("0.log") + blocks("1.log") + blocks("link"));
        assert!(files_usage(&d.path().join("missing")).is_err());
    }

    #[test]
    fn a_dangling_link_fails_the_directory_as_upstreams_stat() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("0.log"), b"x").unwrap();
        std::os::unix::fs::symlink("gone", d.path().join("dangling")).unwrap();
        assert!(files_usage(d.path()).is_err());
    }
}
