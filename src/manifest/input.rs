//! Reading a source within bounds: every reader stops, whatever the input.
//!
//! A CI job that lints a pull request's files reads whatever its author
//! committed: a directory of links to `.`, a file linked to `/dev/zero`, a
//! 2 MB chart that decompresses to gigabytes, a git blob of the same. So
//! every directory walk visits each directory once and nests at most
//! [`MAX_DEPTH`] deep, a walk reads regular files only, every file, stream,
//! archive entry and blob is read through a cap, and one source (an
//! argument: a directory, an archive, a git tree) holds a bounded number of
//! bytes and files. Each bound is an error naming the path and the limit,
//! never a silent truncation: a CRD left unread would make a report look
//! complete when it is not.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::text::thousands;

/// Directories below a source's root a walk enters, at most. Real layouts
/// nest a handful deep (`charts/a/charts/b/crds/`); loops are caught by the
/// visited set, so this only stops trees made to be deep (and keeps the
/// recursion far from the stack's end).
pub const MAX_DEPTH: usize = 64;

/// How much one source may hold: the one knob (`--max-input-bytes`) is the
/// largest file, and the source's totals follow from it, so raising it
/// raises every bound together and the messages can say how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    file_bytes: u64,
}

impl InputLimits {
    /// The default largest file: far above any real CRD file (the largest
    /// of the corpus is about 1.5 MB, whole operator bundles tens of MB),
    /// small enough that reading it is quick and its memory unremarkable.
    pub const DEFAULT_FILE_BYTES: u64 = 64 << 20;
    /// A source holds at most this many times the largest file in all.
    pub const TOTAL_FACTOR: u64 = 4;
    /// A source holds at most one file per this many bytes of the largest
    /// file (16,384 files by default): many tiny files cost memory and time
    /// beyond their bytes (a tar header alone is 512).
    pub const BYTES_PER_FILE: u64 = 4 << 10;
    /// The smallest largest file that can be asked for (one file per
    /// source).
    pub const MIN_FILE_BYTES: u64 = Self::BYTES_PER_FILE;

    /// Limits whose largest file is `file_bytes` (at least
    /// [`Self::MIN_FILE_BYTES`]).
    pub fn new(file_bytes: u64) -> InputLimits {
        InputLimits {
            file_bytes: file_bytes.max(Self::MIN_FILE_BYTES),
        }
    }

    /// The largest file, stream, archive entry, git blob or renderer output.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// The bytes one source may hold in all (decompressed, for archives).
    pub fn total_bytes(&self) -> u64 {
        self.file_bytes.saturating_mul(Self::TOTAL_FACTOR)
    }

    /// The files (archive entries, git blobs) one source may hold.
    pub fn files(&self) -> u64 {
        self.file_bytes / Self::BYTES_PER_FILE
    }
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits::new(Self::DEFAULT_FILE_BYTES)
    }
}

/// A bound that was passed. The caller names the path (file, archive
/// entry, git path); the message names the limit and how to raise it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum LimitError {
    /// One file, stream, entry or blob.
    #[error(
        "larger than {}, the most read of one file: raise it with --max-input-bytes (now {})",
        human(*limit),
        quantity(*limit)
    )]
    File { limit: u64 },
    /// The bytes of one source together.
    #[error(
        "more than {} in all, the most read of one source ({} times --max-input-bytes): \
         raise it with --max-input-bytes (now {})",
        human(limits.total_bytes()),
        InputLimits::TOTAL_FACTOR,
        quantity(limits.file_bytes())
    )]
    Total { limits: InputLimits },
    /// The files of one source.
    #[error(
        "more than {}, the most read of one source (one per {} of --max-input-bytes): \
         raise it with --max-input-bytes (now {})",
        plural(thousands(limits.files()), limits.files()),
        human(InputLimits::BYTES_PER_FILE),
        quantity(limits.file_bytes())
    )]
    Files { limits: InputLimits },
    /// Directories (or packaged subcharts) nested too deep.
    #[error("nested more than {MAX_DEPTH} directories deep, the most read of one source")]
    Depth,
}

/// `64 MiB`; sizes come from the flag's units, so no fractions are needed.
fn human(bytes: u64) -> String {
    match unit(bytes) {
        (n, "") => format!("{} bytes", thousands(n)),
        (n, u) => format!("{n} {u}iB"),
    }
}

/// `64Mi`, as the flag is spelled.
fn quantity(bytes: u64) -> String {
    match unit(bytes) {
        (n, "") => n.to_string(),
        (n, u) => format!("{n}{u}i"),
    }
}

/// `1 file`, `16,384 files`.
fn plural(written: String, n: u64) -> String {
    if n == 1 {
        format!("{written} file")
    } else {
        format!("{written} files")
    }
}

/// The largest of G, M, K that divides `bytes`.
fn unit(bytes: u64) -> (u64, &'static str) {
    for (shift, u) in [(30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return (bytes >> shift, u);
        }
    }
    (bytes, "")
}

/// Why a source's files could not be read. Each names its path.
#[derive(Debug, Error)]
pub enum InputError {
    /// A file or directory that could not be read.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A device, FIFO or socket met in a directory: reading it could block
    /// or never end, and no manifest is one.
    #[error(
        "{path}: {kind}, not a regular file: a directory is read for regular files only \
         (name it on its own to read it)"
    )]
    NotAFile { path: String, kind: &'static str },
    /// A bound was passed.
    #[error("{path}: {source}")]
    Limit {
        path: String,
        #[source]
        source: LimitError,
    },
}

impl InputError {
    fn io(path: &Path, source: std::io::Error) -> InputError {
        InputError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    fn limit(path: &Path, source: LimitError) -> InputError {
        InputError::Limit {
            path: path.display().to_string(),
            source,
        }
    }
}

/// What one source has read so far, against its limits.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    limits: InputLimits,
    bytes: u64,
    files: u64,
}

impl Budget {
    pub(crate) fn new(limits: InputLimits) -> Budget {
        Budget {
            limits,
            bytes: 0,
            files: 0,
        }
    }

    pub(crate) fn limits(&self) -> InputLimits {
        self.limits
    }

    /// Counts one more file of the source.
    pub(crate) fn file(&mut self) -> Result<(), LimitError> {
        self.files += 1;
        if self.files > self.limits.files() {
            return Err(LimitError::Files {
                limits: self.limits,
            });
        }
        Ok(())
    }

    /// Counts one file of `bytes` more of the source: `File` when it alone
    /// is larger than a file may be, `Total` past the source's total.
    pub(crate) fn bytes(&mut self, bytes: u64) -> Result<(), LimitError> {
        if bytes > self.limits.file_bytes() {
            return Err(LimitError::File {
                limit: self.limits.file_bytes(),
            });
        }
        self.total(bytes)
    }

    /// Counts `bytes` more of the source, however many files they are
    /// (an archive's decompressed stream).
    pub(crate) fn total(&mut self, bytes: u64) -> Result<(), LimitError> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.limits.total_bytes() {
            return Err(LimitError::Total {
                limits: self.limits,
            });
        }
        Ok(())
    }

    /// What is left of the source's total.
    pub(crate) fn left(&self) -> u64 {
        self.limits.total_bytes().saturating_sub(self.bytes)
    }

    /// What is left of the source's total, and at most one file: the cap a
    /// read of unknown size gets.
    pub(crate) fn room(&self) -> u64 {
        self.left().min(self.limits.file_bytes())
    }

    /// Reads a file through the cap, its bytes counted (a [`walk`]
    /// counted the file itself).
    pub(crate) fn read_file(&mut self, path: &Path) -> Result<Vec<u8>, InputError> {
        let file = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
        // A regular file says its size: one over the cap is refused unread.
        // Devices and FIFOs say 0 and are read up to the cap.
        let hint = file.metadata().map(|m| m.len()).unwrap_or(0);
        if hint > 0 {
            self.check(hint).map_err(|e| InputError::limit(path, e))?;
        }
        let data = self
            .read(file, hint)
            .map_err(|e| InputError::io(path, e))?
            .map_err(|e| InputError::limit(path, e))?;
        Ok(data)
    }

    /// Whether `bytes` more would fit, without counting them.
    pub(crate) fn check(&self, bytes: u64) -> Result<(), LimitError> {
        self.clone().bytes(bytes)
    }

    /// Reads `reader` to its end, or to the first byte past the cap: no
    /// more than the cap is ever held. The bytes are counted.
    pub(crate) fn read(
        &mut self,
        reader: impl Read,
        hint: u64,
    ) -> std::io::Result<Result<Vec<u8>, LimitError>> {
        let room = self.room();
        let Some(data) = read_capped(reader, hint, room)? else {
            // Past the room: the file's own cap, or what the source had left.
            return Ok(Err(if room >= self.limits.file_bytes() {
                LimitError::File {
                    limit: self.limits.file_bytes(),
                }
            } else {
                LimitError::Total {
                    limits: self.limits,
                }
            }));
        };
        Ok(self.bytes(data.len() as u64).map(|()| data))
    }
}

/// Reads `reader` to its end when it holds at most `cap` bytes (`None`
/// otherwise), reading at most one byte more. `hint` (a file's size) sizes
/// the buffer at once.
pub(crate) fn read_capped(
    reader: impl Read,
    hint: u64,
    cap: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut data = Vec::new();
    // One byte more than the size, for the read that sees the end.
    let first = hint.min(cap).saturating_add(1);
    data.reserve_exact(usize::try_from(first).unwrap_or(usize::MAX));
    reader.take(cap.saturating_add(1)).read_to_end(&mut data)?;
    if data.len() as u64 > cap {
        return Ok(None);
    }
    Ok(Some(data))
}

/// Reads one file named on its own (a configuration file, a baseline, a
/// requirement) as text, through the cap of one file: a path linked to
/// `/dev/zero` or a file larger than the cap is the same error as a
/// manifest's, naming the path and the limit, and never more than the cap
/// is held.
pub fn read_text(path: &Path, limits: InputLimits) -> Result<String, InputError> {
    let data = Budget::new(limits).read_file(path)?;
    utf8(data).map_err(|e| InputError::io(path, e))
}

/// Bytes read within a cap as text: an `InvalidData` error when they are
/// not UTF-8, worded as `read_to_string` words it.
pub(crate) fn utf8(data: Vec<u8>) -> std::io::Result<String> {
    String::from_utf8(data).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// A file a walk found: its path, and its path below the walk's root,
/// `/`-separated.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub path: PathBuf,
    pub relative: String,
}

/// Every file below `root` whose name `keep` accepts, depth first with the
/// entries of each directory in name order (so which of two links to one
/// directory is read does not depend on the file system). Hidden entries
/// are skipped; links are followed, each directory entered once (a link
/// back to an ancestor or in a loop is passed over), at most [`MAX_DEPTH`]
/// deep; a kept entry that is a device, a FIFO or a socket is an error.
/// Each file kept counts as one of the budget's.
pub(crate) fn walk(
    root: &Path,
    keep: &dyn Fn(&Path) -> bool,
    budget: &mut Budget,
) -> Result<Vec<Found>, InputError> {
    let mut walk = Walk {
        keep,
        budget,
        seen: HashSet::new(),
        out: Vec::new(),
    };
    let meta = std::fs::metadata(root).map_err(|e| InputError::io(root, e))?;
    if let Some(id) = dir_id(&meta, root) {
        walk.seen.insert(id);
    }
    walk.dir(root, "", 0)?;
    Ok(walk.out)
}

struct Walk<'a> {
    keep: &'a dyn Fn(&Path) -> bool,
    budget: &'a mut Budget,
    seen: HashSet<DirId>,
    out: Vec<Found>,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, prefix: &str, depth: usize) -> Result<(), InputError> {
        if depth > MAX_DEPTH {
            return Err(InputError::limit(dir, LimitError::Depth));
        }
        let io = |e| InputError::io(dir, e);
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(io)?
            .collect::<Result<_, _>>()
            .map_err(io)?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let relative = format!("{prefix}{name}");
            // Through links; a dangling one is kept when its name is, and
            // its read says what is wrong.
            let meta = std::fs::metadata(&path);
            if let Ok(meta) = &meta
                && meta.is_dir()
            {
                let first = dir_id(meta, &path).is_none_or(|id| self.seen.insert(id));
                if first {
                    self.dir(&path, &format!("{relative}/"), depth + 1)?;
                }
                continue;
            }
            if !(self.keep)(&path) {
                continue;
            }
            if let Ok(meta) = &meta
                && !meta.is_file()
            {
                return Err(InputError::NotAFile {
                    path: path.display().to_string(),
                    kind: special_kind(&meta.file_type()),
                });
            }
            self.budget
                .file()
                .map_err(|e| InputError::limit(&path, e))?;
            self.out.push(Found { path, relative });
        }
        Ok(())
    }
}

/// What identifies a directory however it is reached: device and inode,
/// or (where there are none) the canonical path.
#[cfg(unix)]
type DirId = (u64, u64);
#[cfg(not(unix))]
type DirId = PathBuf;

#[cfg(unix)]
fn dir_id(meta: &std::fs::Metadata, _path: &Path) -> Option<DirId> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn dir_id(_meta: &std::fs::Metadata, path: &Path) -> Option<DirId> {
    std::fs::canonicalize(path).ok()
}

/// What a file that is not a regular file is, for the message.
#[cfg(unix)]
fn special_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_t: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Whether `path` (links followed) is a regular file.
pub(crate) fn is_regular(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_as_the_flag_takes_them() {
        assert_eq!(quantity(64 << 20), "64Mi");
        assert_eq!(quantity(1 << 30), "1Gi");
        assert_eq!(quantity(96 << 10), "96Ki");
        assert_eq!(quantity(5000), "5000");
        assert_eq!(human(64 << 20), "64 MiB");
        assert_eq!(human(5000), "5,000 bytes");
    }

    #[test]
    fn the_default_limits_and_their_message() {
        let l = InputLimits::default();
        assert_eq!(
            (l.file_bytes(), l.total_bytes(), l.files()),
            (64 << 20, 256 << 20, 16384)
        );
        assert_eq!(
            LimitError::Total { limits: l }.to_string(),
            "more than 256 MiB in all, the most read of one source (4 times --max-input-bytes): \
             raise it with --max-input-bytes (now 64Mi)"
        );
        assert_eq!(
            LimitError::Files { limits: l }.to_string(),
            "more than 16,384 files, the most read of one source (one per 4 KiB of \
             --max-input-bytes): raise it with --max-input-bytes (now 64Mi)"
        );
    }

    /// An endless stream stops one byte past the cap.
    #[test]
    fn a_read_stops_past_the_cap() {
        let endless = std::io::repeat(b'a');
        assert!(read_capped(endless, 0, 1000).unwrap().is_none());
        let ten = &b"0123456789"[..];
        assert_eq!(read_capped(ten, 10, 10).unwrap().unwrap(), ten);
        let mut budget = Budget::new(InputLimits::new(8 << 10));
        let over = budget.read(std::io::repeat(0), 0).unwrap();
        assert_eq!(over, Err(LimitError::File { limit: 8 << 10 }));
    }

    /// The total stops a source whose files each fit.
    #[test]
    fn a_budget_counts_files_and_bytes_of_one_source() {
        let mut budget = Budget::new(InputLimits::new(8 << 10));
        for _ in 0..4 {
            budget.read(&[0u8; 8 << 10][..], 0).unwrap().unwrap();
        }
        assert_eq!(
            budget.read(&[0u8; 1][..], 0).unwrap(),
            Err(LimitError::Total {
                limits: InputLimits::new(8 << 10)
            })
        );
        let mut budget = Budget::new(InputLimits::new(8 << 10));
        assert!(budget.file().is_ok() && budget.file().is_ok());
        assert!(budget.file().is_err());
    }
}
