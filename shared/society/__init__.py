"""The agent society (issue 14): N autonomous agents sharing resources, a forum, proposals and
votes, one day after another. Pure domain code: documents, actions, prompts, the day's rules and
the scripted model's play; the functions in ``functions/society`` run it on triggers."""
