//! Streaming tool-call parsers (see DESIGN.md §1).
