//! Decoding of ESR_EL2 trap syndromes into typed trap causes.
