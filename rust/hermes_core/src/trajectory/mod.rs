//! Token-exact trajectories (see DESIGN.md §2).
