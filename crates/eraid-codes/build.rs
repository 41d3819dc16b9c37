//! Links the system ISA-L (Debian `libisal-dev`) and Jerasure (Debian
//! `libjerasure-dev`). We declare the few functions we need by hand in
//! `src/isal.rs` and `src/jerasure.rs` instead of running bindgen: the
//! surface is small and stable, and it keeps libclang out of the build.
fn main() {
    println!("cargo:rustc-link-lib=isal");
    println!("cargo:rustc-link-lib=Jerasure");
    println!("cargo:rerun-if-changed=build.rs");
}
