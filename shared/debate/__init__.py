"""The hierarchical clustered debate (seed 004), as pure domain code: the documents, token
counts, packing data into agents, cluster formation, the user functions and the shipped
examples. Nothing here touches Firestore; ``functions/debate`` runs it on triggers."""
