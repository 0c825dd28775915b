"""The user profile: confirmed current facts, injected as background every turn.

It lives beside the memories: in ``memora.db`` on SQLite, in the shared
database on Postgres (the same statements serve both).
"""

from __future__ import annotations

from memora.models import utcnow
from memora.storage.db import SqlDatabase
from memora.validation import validate_profile_field, validate_user_id

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS profile (
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, key)
);
"""


class UserProfileStore:
    """Key-value profile per user, in the same database as the memories."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        db.ensure_schema("profile", SCHEMA_VERSION, [_SCHEMA.strip().rstrip(";")])

    def get(self, user_id: str) -> dict[str, str]:
        """The whole profile of a user."""
        rows = self.db.query(
            "SELECT key, value FROM profile WHERE user_id = ? ORDER BY key", (user_id,)
        )
        return {row["key"]: row["value"] for row in rows}

    def set(self, user_id: str, key: str, value: str) -> None:
        """Set one profile field.

        Raises:
            InvalidInput: The user id, key or value is empty, too long or not valid UTF-8.
        """
        user_id = validate_user_id(user_id)
        key, value = validate_profile_field(key, value)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO profile VALUES (?, ?, ?, ?) ON CONFLICT(user_id, key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (user_id, key, value, utcnow().isoformat()),
            )

    def unset(self, user_id: str, key: str) -> bool:
        """Remove one field; returns whether it existed."""
        with self.db.transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM profile WHERE user_id = ? AND key = ?", (user_id, key.strip())
            )
            return cursor.rowcount > 0

    def erase(self, user_id: str) -> int:
        """Remove every field of the user's profile; returns how many there were."""
        with self.db.transaction() as conn:
            return int(conn.execute("DELETE FROM profile WHERE user_id = ?", (user_id,)).rowcount)

    def scrub(self) -> bool:
        """Make deleted fields unreadable from storage (see ``SqlDatabase.reclaim``)."""
        return self.db.reclaim("profile")
