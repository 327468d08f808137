"""The nearmiss LangGraph: state, settings, wiring and the command line."""
