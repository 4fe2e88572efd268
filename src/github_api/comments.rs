//! One comment on a pull request, kept up to date: the comment holding a
//! hidden marker is edited in place, so every push updates the same comment
//! instead of adding one (docs.github.com/en/rest/issues/comments: list,
//! update, create; a pull request is an issue to this API).

use serde::Deserialize;

use super::{GithubApi, GithubError};

/// Pages of 100 comments looked through for the marker: a pull request with
/// more comments than that gets a new one rather than endless paging.
const PAGES: u32 = 10;

#[derive(Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    html_url: String,
}

/// What [`GithubApi::upsert_comment`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Posted {
    Updated { url: String },
    Created { url: String },
}

impl GithubApi {
    /// Edit the comment on pull request `number` whose body starts with
    /// `marker`, or create one; `body` must start with `marker` for the next
    /// update to find it.
    pub async fn upsert_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<Posted, GithubError> {
        let existing = self.find_comment(number, marker).await?;
        let payload = serde_json::json!({ "body": body });
        match existing {
            Some(id) => {
                let url = self.url(&format!("issues/comments/{id}"));
                let step = format!("update comment {id} on pull request #{number}");
                let request = self.request(reqwest::Method::PATCH, &url).json(&payload);
                let comment: Comment = self.json(&step, &url, request).await?;
                Ok(Posted::Updated {
                    url: comment.html_url,
                })
            }
            None => {
                let url = self.url(&format!("issues/{number}/comments"));
                let step = format!("comment on pull request #{number}");
                let request = self.request(reqwest::Method::POST, &url).json(&payload);
                let comment: Comment = self.json(&step, &url, request).await?;
                Ok(Posted::Created {
                    url: comment.html_url,
                })
            }
        }
    }

    async fn find_comment(&self, number: u64, marker: &str) -> Result<Option<u64>, GithubError> {
        for page in 1..=PAGES {
            let url = self.url(&format!(
                "issues/{number}/comments?per_page=100&page={page}"
            ));
            let step = format!("list the comments of pull request #{number}");
            let comments: Vec<Comment> = self.get_json(&step, &url).await?;
            if let Some(found) = comments
                .iter()
                // The marker opens the comment: a comment quoting it further
                // down (someone discussing the bot's table) is not ours.
                .find(|c| c.body.as_deref().is_some_and(|b| b.starts_with(marker)))
            {
                return Ok(Some(found.id));
            }
            if comments.len() < 100 {
                break;
            }
        }
        Ok(None)
    }
}
