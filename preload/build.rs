//! Build script: compile src/shim.c (the exports whose C prototype is
//! variadic: fcntl, fcntl64) into a static archive linked into the crate.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    println!("cargo:rerun-if-changed=src/shim.c");
    let obj = out.join("shim.o");
    let ok = Command::new(&cc)
        .args(["-c", "-O2", "-fPIC", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&obj)
        .arg("src/shim.c")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "cannot compile src/shim.c");
    let lib = out.join("librspreload_shim.a");
    let _ = std::fs::remove_file(&lib);
    let ok = Command::new("ar").arg("crs").arg(&lib).arg(&obj).status().map(|s| s.success()).unwrap_or(false);
    assert!(ok, "ar failed for the shim");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=rspreload_shim");
}
