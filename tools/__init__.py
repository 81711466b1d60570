"""Command-line tools for experimenters: loading templates into Firestore."""
