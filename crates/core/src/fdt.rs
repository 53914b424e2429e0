//! Guest device trees generated from the configuration.
