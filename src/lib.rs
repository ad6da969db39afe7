//! toyvm: a profile-driven dynamic optimizer runtime.
