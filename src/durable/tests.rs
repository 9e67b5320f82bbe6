//! Replacing files on a real file system; the full disk itself is in tests/durable.rs.

use super::*;
use std::os::unix::fs::FileTypeExt as _;

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The folder's entries, sorted: a temporary file left behind shows here.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn replaces_the_content_and_keeps_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.sh");
    fs::write(&file, "old\n").unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o750)).unwrap();
    let inode = fs::metadata(&file).unwrap().ino();
    replace(&file, b"new\n", Options::default()).unwrap();
    assert_eq!(fs::read_to_string(&file).unwrap(), "new\n");
    assert_eq!(mode(&file), 0o750);
    // A new file took its place: readers holding the old one keep a whole old version.
    assert_ne!(fs::metadata(&file).unwrap().ino(), inode);
    assert_eq!(entries(dir.path()), ["run.sh"]);
}

#[test]
fn a_new_file_gets_the_mode_asked_for_and_exec_bits_follow_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("trusted.toml");
    replace(&private, b"x", Options::private()).unwrap();
    assert_eq!(mode(&private), 0o600);
    let script = dir.path().join("s");
    fs::write(&script, "a").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o640)).unwrap();
    let exec = Options {
        executable: Some(true),
        ..Options::default()
    };
    replace(&script, b"b", exec).unwrap();
    assert_eq!(mode(&script), 0o750);
    let plain = Options {
        executable: Some(false),
        ..Options::default()
    };
    replace(&script, b"c", plain).unwrap();
    assert_eq!(mode(&script), 0o640);
}

#[test]
fn a_symlink_is_followed_unless_the_path_itself_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("real")).unwrap();
    let target = dir.path().join("real/config.toml");
    fs::write(&target, "old").unwrap();
    let link = dir.path().join("config.toml");
    std::os::unix::fs::symlink("real/config.toml", &link).unwrap();
    replace(&link, b"through", Options::default()).unwrap();
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(fs::read_to_string(&target).unwrap(), "through");
    // A dangling link creates what it names.
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink("real/new.txt", &dangling).unwrap();
    replace(&dangling, b"made", Options::default()).unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join("real/new.txt")).unwrap(),
        "made"
    );
    let itself = Options {
        through_symlinks: false,
        ..Options::default()
    };
    replace(&link, b"itself", itself).unwrap();
    assert!(fs::symlink_metadata(&link).unwrap().is_file());
    assert_eq!(fs::read_to_string(&target).unwrap(), "through");
    // And a symlink can be put back in place of a file.
    stage_symlink(&link, Path::new("real/config.toml"))
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(fs::read_to_string(&link).unwrap(), "through");
    assert_eq!(entries(dir.path()), ["config.toml", "dangling", "real"]);
}

#[test]
fn fifos_and_folders_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let err = replace(&fifo, b"x", Options::default()).unwrap_err();
    assert!(err.reason().contains("FIFO"), "{err}");
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    let err = replace(dir.path(), b"x", Options::default()).unwrap_err();
    assert!(err.to_string().contains("folder"), "{err}");
    assert_eq!(entries(dir.path()), ["pipe"]);
}

#[test]
fn a_failed_write_removes_the_temporary_file_and_keeps_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.rs");
    fs::write(&file, "the original\n").unwrap();
    let err = stage_with(&file, Options::default(), |f| {
        f.write_all(b"half of the new ")?;
        Err(io::Error::from_raw_os_error(libc::ENOSPC))
    })
    .unwrap_err();
    assert_eq!(err.fault(), Some(StorageFault::DiskFull));
    assert_eq!(
        err.reason(),
        "the disk is full (No space left on device); free space and retry"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "the original\n");
    assert_eq!(entries(dir.path()), ["big.rs"]);
}

#[test]
fn a_failed_rename_or_a_dropped_stage_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    fs::write(&file, "before").unwrap();
    let staged = stage(&file, b"after", Options::default()).unwrap();
    assert_eq!(entries(dir.path()).len(), 2);
    drop(staged);
    assert_eq!(entries(dir.path()), ["a.txt"]);
    // A folder takes the file's place between staging and the rename.
    let staged = stage(&file, b"after", Options::default()).unwrap();
    fs::remove_file(&file).unwrap();
    fs::create_dir(&file).unwrap();
    fs::write(file.join("inside"), "x").unwrap();
    let err = staged.commit().unwrap_err();
    assert!(
        matches!(
            err,
            WriteError::Io {
                step: Step::Rename,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(entries(dir.path()), ["a.txt"]);
}

#[test]
fn appends_whole_lines_to_a_private_file_and_refuses_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let memory = dir.path().join("memory.md");
    append(&memory, b"- one\n", Options::private()).unwrap();
    append(&memory, b"- two\n", Options::private()).unwrap();
    assert_eq!(fs::read_to_string(&memory).unwrap(), "- one\n- two\n");
    assert_eq!(mode(&memory), 0o600);
    let fifo = dir.path().join("pipe");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    // Refused before it is opened: nothing waits for a reader.
    assert!(append(&fifo, b"x", Options::default()).is_err());
}

#[test]
fn the_machines_faults_are_told_from_others() {
    let fault = |code| StorageFault::of(&io::Error::from_raw_os_error(code));
    assert_eq!(fault(libc::ENOSPC), Some(StorageFault::DiskFull));
    assert_eq!(fault(libc::EDQUOT), Some(StorageFault::QuotaExceeded));
    assert_eq!(fault(libc::EROFS), Some(StorageFault::ReadOnly));
    assert_eq!(fault(libc::EIO), Some(StorageFault::DeviceError));
    assert_eq!(fault(libc::EACCES), None);
}
