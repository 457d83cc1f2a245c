"""Send stage: the API client, the one response policy, chunking, in-doubt handling, steps."""
