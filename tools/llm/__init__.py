"""Runs in the parent: LLM access, record and replay, the LLM patcher's prompt and answers, the local model server."""
