//! napi surface
