//! ptx-builder
