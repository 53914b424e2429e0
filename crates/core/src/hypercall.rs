//! Decoding of guest hypercalls (SMCCC function IDs and arguments).
