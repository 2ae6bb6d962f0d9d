//! stdio (to be written)
