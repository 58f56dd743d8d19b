//! The `skills` table (docs/review-service.md §2, SkillMetaRow; §4, Skills):
//! installed reviewer skills pinned to a commit SHA, with the fetched files kept as one blob.
//! The blob is read only by [`Store::enabled_skill_blobs`]; every row the API returns comes
//! from [`SKILL_COLUMNS`], which leaves it out.

use crate::rows::skill_from_row;
use crate::{Result, Store};
use review_domain::EpochSeconds;
use review_domain::SkillMetaRow;
use sqlx::Row;
use sqlx::any::AnyRow;

/// The columns of a SkillMetaRow: every column but `blob`.
const SKILL_COLUMNS: &str =
    "name, source_url, owner, repo, path, \"ref\", description, enabled, created_at";

/// A skill to install (docs/review-service.md §4, Skills: install).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSkill {
    /// `^[a-z0-9]+(-[a-z0-9]+)*$`, the primary key.
    pub name: String,
    /// The tree URL it was installed from, as given.
    pub source_url: String,
    /// Owner and name of the repository holding the skill's folder.
    pub owner: String,
    pub repo: String,
    /// Folder path within the repository.
    pub path: String,
    /// The commit SHA the files were fetched at.
    pub git_ref: String,
    /// From the front matter of its `SKILL.md`.
    pub description: Option<String>,
    /// The fetched files, encoded by the caller.
    pub blob: Vec<u8>,
}

impl Store {
    /// Every skill, newest created_at first (docs/review-service.md §4, GET /api/skills). No blob.
    pub async fn skills(&self) -> Result<Vec<SkillMetaRow>> {
        let sql = format!("SELECT {SKILL_COLUMNS} FROM skills ORDER BY created_at DESC, name");
        self.all(sqlx::query(&sql), skill_from_row).await
    }

    /// One skill, or None. No blob.
    pub async fn skill(&self, name: &str) -> Result<Option<SkillMetaRow>> {
        let sql = format!("SELECT {SKILL_COLUMNS} FROM skills WHERE name = $1");
        self.optional(sqlx::query(&sql).bind(name), skill_from_row)
            .await
    }

    /// Install a skill enabled, or re-install one by name: the row is updated in place (its
    /// created_at kept) and re-enabled (docs/review-service.md §4, Skills). Returns the re-read
    /// row.
    pub async fn upsert_skill(&self, skill: &NewSkill, now: EpochSeconds) -> Result<SkillMetaRow> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO skills (name, source_url, owner, repo, path, \"ref\", description, enabled, blob, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9)
             ON CONFLICT (name) DO UPDATE SET source_url = excluded.source_url,
                 owner = excluded.owner, repo = excluded.repo, path = excluded.path,
                 \"ref\" = excluded.\"ref\", description = excluded.description, enabled = 1,
                 blob = excluded.blob",
        )
        .bind(&skill.name)
        .bind(&skill.source_url)
        .bind(&skill.owner)
        .bind(&skill.repo)
        .bind(&skill.path)
        .bind(&skill.git_ref)
        .bind(&skill.description)
        .bind(&skill.blob)
        .bind(now.0)
        .execute(&mut *tx)
        .await?;
        let row = sqlx::query(&format!(
            "SELECT {SKILL_COLUMNS} FROM skills WHERE name = $1"
        ))
        .bind(&skill.name)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        skill_from_row(&row)
    }

    /// Enable (`on`) or disable a skill; the re-read row, or None when there is no such skill.
    pub async fn set_skill_enabled(&self, name: &str, on: bool) -> Result<Option<SkillMetaRow>> {
        let query = sqlx::query("UPDATE skills SET enabled = $1 WHERE name = $2");
        match self.changed(query.bind(i64::from(on)).bind(name)).await? {
            0 => Ok(None),
            _ => self.skill(name).await,
        }
    }

    /// Delete a skill; true when one was deleted.
    pub async fn delete_skill(&self, name: &str) -> Result<bool> {
        let query = sqlx::query("DELETE FROM skills WHERE name = $1").bind(name);
        Ok(self.changed(query).await? > 0)
    }

    /// The blob of one skill (None when there is no such skill or it has no blob).
    pub async fn skill_blob(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let query = sqlx::query("SELECT blob FROM skills WHERE name = $1").bind(name);
        Ok(self.optional(query, blob_of).await?.flatten())
    }

    /// Enabled skills with their blobs, by name: what a review is offered.
    pub async fn enabled_skill_blobs(&self) -> Result<Vec<(SkillMetaRow, Vec<u8>)>> {
        let sql =
            format!("SELECT {SKILL_COLUMNS}, blob FROM skills WHERE enabled = 1 ORDER BY name");
        let with_blob = |r: &AnyRow| Ok((skill_from_row(r)?, blob_of(r)?.unwrap_or_default()));
        self.all(sqlx::query(&sql), with_blob).await
    }
}

/// The `blob` column of a row (null for a row written without one).
fn blob_of(r: &AnyRow) -> Result<Option<Vec<u8>>> {
    Ok(r.try_get("blob")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn new_skill(name: &str, sha: &str) -> NewSkill {
        NewSkill {
            name: name.into(),
            source_url: format!("https://github.com/o/r/tree/main/skills/{name}"),
            owner: "o".into(),
            repo: "r".into(),
            path: format!("skills/{name}"),
            git_ref: sha.into(),
            description: Some("d".into()),
            blob: b"files".to_vec(),
        }
    }

    #[tokio::test]
    async fn reinstall_updates_in_place_and_reenables() {
        let (_dir, store) = crate::test_store().await;
        let first = store
            .upsert_skill(&new_skill("a", "s1"), review_domain::EpochSeconds(10))
            .await
            .unwrap();
        assert_eq!((first.enabled, first.git_ref.as_str()), (1, "s1"));
        store.set_skill_enabled("a", false).await.unwrap();
        assert!(store.enabled_skill_blobs().await.unwrap().is_empty());
        let again = store
            .upsert_skill(&new_skill("a", "s2"), review_domain::EpochSeconds(20))
            .await
            .unwrap();
        assert_eq!(
            (again.enabled, again.git_ref.as_str(), again.created_at),
            (1, "s2", 10)
        );
        store
            .upsert_skill(&new_skill("b", "s3"), review_domain::EpochSeconds(30))
            .await
            .unwrap();
        let names: Vec<String> = store
            .skills()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, vec!["b", "a"]);
        let enabled = store.enabled_skill_blobs().await.unwrap();
        assert_eq!(enabled.len(), 2);
        assert_eq!(enabled[0].1, b"files".to_vec());
        assert_eq!(store.set_skill_enabled("nope", true).await.unwrap(), None);
        assert!(store.delete_skill("a").await.unwrap());
        assert!(!store.delete_skill("a").await.unwrap());
    }
}
