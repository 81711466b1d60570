"""The hierarchical clustered debate on triggers: the start (categories, agents, first layer),
one statement per Pub/Sub turn, round, cluster and layer completion in transactions, the final
decision, and the re-drive of work an invocation lost. Pure domain code is in shared/debate."""
