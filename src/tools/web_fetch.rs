//! The `web_fetch` tool: one page over http(s), as readable text.
//!
//! Whether the first URL may be fetched is the permission policy's call
//! (rules on the URL, `web_fetch(https://docs.rs/*)`), made by the batch
//! before the tool runs. Redirects are followed here, by hand, so that every
//! hop is judged by the same rules: a page allowed by a rule cannot bounce
//! the fetch to a host no rule allows. The body is read with a size cap,
//! HTML is turned into text by `html2text`, secrets are masked and the text
//! is cut to `max_chars`. The overall time limit is the batch's tool timeout.
//!
//! The fetch runs in agentci's process, outside the sandbox, so every hop
//! also passes `address`: a loopback, private, link-local or metadata
//! address is reached only when an allow rule names its host, and the
//! request connects to exactly the address that was checked. When the job
//! lists the hosts the run may reach (`sandbox.network: [hosts]`), the
//! fetch goes through the run's proxy instead, which applies that list and
//! the same address checks, and reports the connection.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};

use super::support::{cut_chars, str_arg, usize_arg};

mod address;
use super::{BoxFuture, RuleArgument, Tool, ToolContext, ToolErrorCode, ToolResult, ToolSpec};

/// Redirects followed before the fetch gives up (browsers allow ~20; a
/// documentation page needs one or two).
pub const MAX_REDIRECTS: usize = 5;
/// Bytes of body read before the rest is dropped: a page, not a download.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// Characters returned when the model does not ask for fewer.
pub const DEFAULT_MAX_CHARS: usize = 20_000;
/// Time to open a connection; the whole call is bounded by the tool timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Line width html2text wraps at: wide enough that code lines stay whole.
const TEXT_WIDTH: usize = 120;

pub struct WebFetchTool {
    spec: ToolSpec,
}

impl WebFetchTool {
    pub fn new() -> Self {
        WebFetchTool {
            spec: ToolSpec {
                name: "web_fetch".into(),
                description: "Fetch a web page (http or https) and return it as readable text \
                    (HTML is converted to text). Only URLs the job's permission rules allow can \
                    be fetched; redirects are followed (at most 5), each judged by the same \
                    rules. `max_chars` caps the text returned (default 20000)."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "url": {"type": "string",
                                "description": "Absolute http:// or https:// URL."},
                        "max_chars": {"type": "integer", "minimum": 1,
                                      "description": "Characters of text to return at most. Default 20000."}
                    },
                    "required": ["url"],
                    "additionalProperties": false
                }),
                read_only: true,
                rule_argument: RuleArgument::Url,
                changes_files: false,
            },
        }
    }
}

impl Default for WebFetchTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for WebFetchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let written = str_arg(&args, "url").unwrap_or_default();
            let max_chars = usize_arg(&args, "max_chars")
                .unwrap_or(DEFAULT_MAX_CHARS)
                .min(ctx.limits.max_output_chars);
            match fetch(written, ctx).await {
                Ok(page) => page.into_result(max_chars, ctx),
                Err(failure) => failure,
            }
        })
    }
}

/// A page as fetched, before it is turned into text.
struct Page {
    url: Url,
    status: u16,
    content_type: String,
    body: Vec<u8>,
    /// The body was longer than [`MAX_BODY_BYTES`].
    body_cut: bool,
    redirects: Vec<String>,
}

/// `url` parsed, when it is an absolute http(s) URL.
fn web_url(url: &str) -> Result<Url, ToolResult> {
    let parsed = Url::parse(url.trim()).map_err(|e| {
        ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("`{url}` is not an absolute URL ({e}); write it as https://host/path"),
        )
    })?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(ToolResult::failure(
            ToolErrorCode::InvalidArgument,
            format!("`web_fetch` fetches http and https URLs only, not `{other}:`"),
        )),
    }
}

async fn fetch(written: &str, ctx: &ToolContext) -> Result<Page, ToolResult> {
    let mut url = web_url(written)?;
    let mut redirects = Vec::new();
    loop {
        let client = client_to(&url, ctx).await?;
        let mut response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| io(format!("cannot fetch `{url}`: {e}")))?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            let location = location.to_str().unwrap_or_default();
            let next = url.join(location).map_err(|e| {
                io(format!(
                    "`{url}` redirected to `{location}`, which is not a URL: {e}"
                ))
            })?;
            if redirects.len() >= MAX_REDIRECTS {
                return Err(io(format!(
                    "`{written}` redirected more than {MAX_REDIRECTS} times; fetch the final \
                     page's URL directly"
                )));
            }
            let next = web_url(next.as_str())?;
            judge_hop(ctx, &url, &next)?;
            redirects.push(next.to_string());
            url = next;
            continue;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let mut body = Vec::new();
        let mut body_cut = false;
        // Read chunk by chunk so a huge (or endless) body stops at the cap.
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| io(format!("reading `{url}` failed: {e}")))?
        {
            let room = MAX_BODY_BYTES - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                body_cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Page {
            url,
            status: status.as_u16(),
            content_type,
            body,
            body_cut,
            redirects,
        });
    }
}

/// An HTTP client that connects `url`'s host to the addresses checked for
/// it and nowhere else: no second DNS lookup, no proxy (a proxy would
/// resolve the host itself).
async fn client_to(url: &Url, ctx: &ToolContext) -> Result<reqwest::Client, ToolResult> {
    if let Some(proxy) = ctx.processes.network_proxy_url() {
        return through_proxy(proxy);
    }
    let named = url.host_str().is_some_and(|host| {
        ctx.fetch_policy
            .as_ref()
            .is_some_and(|policy| policy.names_host(host))
    });
    let destination = address::check(url, named)
        .await
        .map_err(|why| ToolResult::failure(ToolErrorCode::PermissionDenied, why.to_string()))?;
    let mut builder = client_builder().no_proxy();
    if let Some(domain) = &destination.domain {
        builder = builder.resolve_to_addrs(domain, &destination.addresses);
    }
    builder
        .build()
        .map_err(|e| io(format!("cannot start an HTTP client: {e}")))
}

/// With `sandbox.network: [hosts]` a fetch goes through the run's proxy, as
/// the commands' connections do: the host must be listed there too, the
/// proxy resolves it and checks its addresses, and the connection is a
/// `network.request` event.
fn through_proxy(proxy: &str) -> Result<reqwest::Client, ToolResult> {
    let proxy = reqwest::Proxy::all(proxy)
        .map_err(|e| io(format!("cannot use the run's network proxy: {e}")))?;
    client_builder()
        .proxy(proxy)
        .build()
        .map_err(|e| io(format!("cannot start an HTTP client: {e}")))
}

/// What every fetch's client has: redirects left to [`fetch`] (each hop
/// is judged), the connect timeout, and who is asking.
fn client_builder() -> reqwest::ClientBuilder {
    crate::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("agentci/", env!("CARGO_PKG_VERSION"), " web_fetch"))
}

/// A redirect hop is a new fetch: the job's rules must allow it too.
fn judge_hop(ctx: &ToolContext, from: &Url, to: &Url) -> Result<(), ToolResult> {
    let Some(policy) = &ctx.fetch_policy else {
        return Err(ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            format!("`{from}` redirected to `{to}`; redirects are not followed here"),
        ));
    };
    if let Some(rule) = policy.denies_fetch(to.as_str()) {
        return Err(ToolResult::failure(
            ToolErrorCode::PermissionDenied,
            format!(
                "`{from}` redirected to `{to}`, which the job's permission policy denies ({rule})"
            ),
        ));
    }
    Ok(())
}

fn io(message: String) -> ToolResult {
    ToolResult::failure(ToolErrorCode::Io, message)
}

impl Page {
    fn into_result(self, max_chars: usize, ctx: &ToolContext) -> ToolResult {
        let html = self.content_type.contains("html")
            || (self.content_type.is_empty() && looks_like_html(&self.body));
        let text = if html {
            html2text::from_read(self.body.as_slice(), TEXT_WIDTH)
                .unwrap_or_else(|_| String::from_utf8_lossy(&self.body).into_owned())
        } else {
            String::from_utf8_lossy(&self.body).into_owned()
        };
        // The page may echo a secret (a token in a URL, a mirrored env): mask before the cut.
        let text = ctx.secrets.redact(&text).into_owned();
        let (shown, cut) = cut_chars(&text, max_chars);
        let mut output = shown.to_string();
        if cut > 0 || self.body_cut {
            output.push_str(&format!(
                "\n[… cut: {} more characters{}; ask with a larger max_chars or a more specific URL]",
                cut,
                if self.body_cut {
                    format!(", and the page was longer than {MAX_BODY_BYTES} bytes")
                } else {
                    String::new()
                }
            ));
        }
        let data = json!({
            "url": self.url.as_str(),
            "status": self.status,
            "content_type": self.content_type,
            "bytes": self.body.len(),
            "chars": text.chars().count(),
            "cut_chars": cut,
            "body_cut": self.body_cut,
            "redirects": self.redirects,
        });
        let summary = format!(
            "fetched `{}` ({}, {} characters{})",
            self.url,
            self.status,
            text.chars().count(),
            if html { ", HTML as text" } else { "" }
        );
        if self.status >= 400 {
            let code = if self.status == 404 || self.status == 410 {
                ToolErrorCode::NotFound
            } else {
                ToolErrorCode::Io
            };
            return ToolResult::failure(
                code,
                format!("`{}` answered HTTP {}", self.url, self.status),
            )
            .with_output(output)
            .with_data(data);
        }
        ToolResult::success(summary, output, data)
    }
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.trim_start().starts_with("<!doctype html") || head.contains("<html")
}
