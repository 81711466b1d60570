"""Deploy the backend to a Google Cloud project from the function registry.

``python -m tools.deploy --project P --region R [--dry-run]``: assembles the deployable
source, creates the Pub/Sub topics and scheduler jobs, deploys every registry function with
``gcloud functions deploy --gen2``, then the Firestore indexes and security rules. Lives in
tools/, outside the deployed packages (see source.py). docs/DEPLOY.md has the prerequisites.
"""
