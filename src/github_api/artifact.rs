//! Reading `results.json` out of an Actions artifact's zip.
//!
//! An artifact is data anyone with write access to a branch could have made,
//! so the zip is read as hostile: it stays in memory (nothing is extracted,
//! so no entry name can point outside a folder), only the entry named exactly
//! `results.json` at its root is read, and that entry is cut off past
//! [`MAX_RESULTS_BYTES`] whatever size its header claims (a zip bomb inflates
//! no further than that).

use std::io::Read;

/// The most of an artifact's zip downloaded.
pub const MAX_ZIP_BYTES: usize = 64 << 20;
/// The most of `results.json` inflated.
pub const MAX_RESULTS_BYTES: u64 = 64 << 20;
/// The one entry read.
pub const RESULTS_ENTRY: &str = "results.json";

/// Why an artifact's zip gave no results.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("the artifact is not a zip archive: {0}")]
    NotZip(String),
    #[error("the artifact has no `{RESULTS_ENTRY}` at its root")]
    NoResults,
    #[error("`{RESULTS_ENTRY}` in the artifact cannot be read: {0}")]
    Unreadable(String),
    #[error("`{RESULTS_ENTRY}` in the artifact is larger than {MAX_RESULTS_BYTES} bytes")]
    TooLarge,
}

/// The bytes of `results.json` in `zip`.
pub fn results_json(zip: &[u8]) -> Result<Vec<u8>, ArtifactError> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip))
        .map_err(|e| ArtifactError::NotZip(e.to_string()))?;
    // The name's exact bytes: no decoding that could make another name match.
    let index = archive
        .index_for_name_raw(RESULTS_ENTRY.as_bytes())
        .ok_or(ArtifactError::NoResults)?;
    let entry = archive
        .by_index(index)
        .map_err(|e| ArtifactError::Unreadable(e.to_string()))?;
    if !entry.is_file() {
        return Err(ArtifactError::NoResults);
    }
    let mut text = Vec::new();
    entry
        .take(MAX_RESULTS_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| ArtifactError::Unreadable(e.to_string()))?;
    if text.len() as u64 > MAX_RESULTS_BYTES {
        return Err(ArtifactError::TooLarge);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, body) in entries {
            writer
                .start_file(*name, SimpleFileOptions::default())
                .unwrap();
            writer.write_all(body).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    #[test]
    fn reads_only_the_root_results_json() {
        let zip = zip_of(&[
            ("../results.json", b"outside"),
            ("shard1/results.json", b"nested"),
            ("results.json", b"{\"version\":1}"),
        ]);
        assert_eq!(results_json(&zip).unwrap(), b"{\"version\":1}");
    }

    #[test]
    fn a_traversing_name_is_not_taken_for_results_json() {
        let zip = zip_of(&[("../results.json", b"outside"), ("x/../results.json", b"x")]);
        assert!(matches!(results_json(&zip), Err(ArtifactError::NoResults)));
    }

    #[test]
    fn garbage_and_bombs_are_refused() {
        assert!(matches!(
            results_json(b"not a zip at all"),
            Err(ArtifactError::NotZip(_))
        ));
        // 64 MiB of zeros deflate to a small entry; reading stops past the limit.
        let zeros = vec![0u8; (MAX_RESULTS_BYTES + 10) as usize];
        let zip = zip_of(&[("results.json", &zeros)]);
        assert!(zip.len() < 1 << 20, "the zip is small: {}", zip.len());
        assert!(matches!(results_json(&zip), Err(ArtifactError::TooLarge)));
    }
}
