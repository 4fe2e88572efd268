//! Recording: a provider wrapper that writes every exchange to a cassette.
//!
//! [`RecordingProvider`] forwards each request to the real provider and, when
//! it answers, appends the normalized exchange to the cassette and flushes it
//! right away, so a run that is killed keeps everything recorded so far.
//! Failed calls are not recorded, and neither are retries: only the answer
//! that finally came. Each line is masked with the run's secrets as the
//! trace is (an endpoint that echoes the API key does not get it into the
//! cassette); a replay then serves the masked text, as a resumed run does.
//! The format lives in [`super::cassette`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::cassette::{CassetteHeader, Conversation, Exchange, WorkspacePaths};
use super::{ChatRequest, ChatResponse, ModelProvider, ProviderError, ProviderObserver};
use crate::provider::ModelInfo;
use crate::redact::Redactor;
use crate::safe_file::MaskedStream;
use futures_util::future::BoxFuture;

/// Wraps any provider and records what it says.
pub struct RecordingProvider {
    inner: Box<dyn ModelProvider>,
    path: PathBuf,
    paths: WorkspacePaths,
    /// The file and the previous request, which the next line is stored against.
    file: Mutex<(MaskedStream, Conversation)>,
    /// The run's secrets, masked in every line.
    secrets: Redactor,
    /// Whether the lines are an eval judge's ([`Exchange::judge`]).
    judge: bool,
}

impl std::fmt::Debug for RecordingProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingProvider")
            .field("model", &self.inner.model_info())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl RecordingProvider {
    /// Creates (or truncates) the cassette at `path` and writes its header.
    /// `workspace_root` is the absolute path replaced by `${WORKSPACE}`;
    /// `event_text` says whether the prompt holds what the GitHub event
    /// that started the run adds (see [`CassetteHeader::event_text`]).
    pub fn new(
        inner: Box<dyn ModelProvider>,
        path: impl Into<PathBuf>,
        workspace_root: &Path,
        event_text: bool,
        secrets: Redactor,
    ) -> Result<Self, ProviderError> {
        let path = path.into();
        let cannot_create = |err: std::io::Error| {
            ProviderError::Config(format!("cannot create cassette {}: {err}", path.display()))
        };
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent).map_err(cannot_create)?;
        }
        let file = crate::safe_file::create_stream(&path).map_err(cannot_create)?;
        let info = inner.model_info();
        let recorder = Self {
            inner,
            paths: WorkspacePaths::new(workspace_root),
            file: Mutex::new((file, Conversation::default())),
            secrets,
            path,
            judge: false,
        };
        let header = CassetteHeader {
            event_text,
            ..CassetteHeader::new(info.provider, info.name)
        };
        recorder.append(|_| &header)?;
        Ok(recorder)
    }

    /// Appends an eval judge's exchanges to the cassette a run recorded at
    /// `path`, after the run's (see [`Exchange::judge`]). The file is opened
    /// without following a symlink at its path.
    pub fn append_judge(
        inner: Box<dyn ModelProvider>,
        path: impl Into<PathBuf>,
        workspace_root: &Path,
        secrets: Redactor,
    ) -> Result<Self, ProviderError> {
        let path = path.into();
        let file = crate::safe_file::append_stream_nofollow(&path).map_err(|err| {
            ProviderError::Config(format!(
                "cannot append to cassette {}: {err}",
                path.display()
            ))
        })?;
        Ok(Self {
            inner,
            paths: WorkspacePaths::new(workspace_root),
            file: Mutex::new((file, Conversation::default())),
            secrets,
            path,
            judge: true,
        })
    }

    /// Also normalizes these skill folders (name, absolute folder) in the cassette.
    pub fn with_skill_folders(mut self, folders: &[(String, std::path::PathBuf)]) -> Self {
        for (name, dir) in folders {
            self.paths = self.paths.with_skill_folder(name, dir);
        }
        self
    }

    /// The cassette being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one JSON line, made from the previous request by `line`, and
    /// flushes it: whole lines only, under the lock so concurrent calls never
    /// interleave and every delta is against the line before it.
    fn append<T: serde::Serialize>(
        &self,
        line: impl FnOnce(&mut Conversation) -> T,
    ) -> Result<(), ProviderError> {
        let write_error = |err: &dyn std::fmt::Display| {
            ProviderError::Config(format!(
                "cannot write to cassette {}: {err}; check free space and permissions",
                self.path.display()
            ))
        };
        let mut guard = self
            .file
            .lock()
            .map_err(|_| write_error(&"an earlier write panicked"))?;
        let (file, conversation) = &mut *guard;
        let mut text = self
            .secrets
            .mask_json(&line(conversation))
            .map_err(|err| write_error(&err))?
            .into_bytes();
        text.push(b'\n');
        // A masked line and a newline are still masked.
        file.write_masked(&crate::redact::Masked::from_masked_parts(text))
            .and_then(|()| file.flush())
            .map_err(|err| write_error(&err))
    }

    fn record(&self, request: &ChatRequest, response: &ChatResponse) -> Result<(), ProviderError> {
        let normalized = self.paths.normalize_request(request);
        let response = self.paths.normalize_response(response);
        self.append(|conversation| Exchange {
            request: conversation.encode(&normalized),
            response,
            judge: self.judge,
        })
    }
}

impl ModelProvider for RecordingProvider {
    /// The wrapped provider's identity: recording does not change who answers.
    fn model_info(&self) -> ModelInfo {
        self.inner.model_info()
    }

    fn complete_observed<'a>(
        &'a self,
        request: &'a ChatRequest,
        observer: &'a dyn ProviderObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let response = self.inner.complete_observed(request, observer).await?;
            self.record(request, &response)?;
            Ok(response)
        })
    }
}
