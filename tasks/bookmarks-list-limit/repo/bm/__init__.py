"""Terminal bookmarks."""
