"""Tools of nearmiss: plain functions and classes that know nothing of LangGraph."""
