//! Stages the Streamlit dashboard (`dashboards/` at the project root) in `OUT_DIR`, so that maturin
//! puts it inside the wheel at `fabricscope/_dashboard_app/` (`[tool.maturin] include` with
//! `from = "out-dir"` in pyproject.toml). The app's source stays in `dashboards/`; an installed
//! wheel runs `fabricscope dashboard` without a checkout.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

/// Directory name inside `OUT_DIR` and inside the installed `fabricscope` package.
const STAGED: &str = "_dashboard_app";

fn main() -> Result<(), Box<dyn Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    // Same relative place in a checkout and in the sdist (which keeps the project layout).
    let source = manifest_dir.join("..").join("..").join("dashboards");
    println!("cargo:rerun-if-changed={}", source.display());
    if !source.join("app.py").is_file() {
        return Err(format!(
            "{}: no app.py; the wheel must contain the dashboard (is dashboards/ missing from the sdist?)",
            source.display()
        )
        .into());
    }
    let target = out_dir.join(STAGED);
    // Start clean so that a page deleted from dashboards/ is not shipped from an old build.
    if target.exists() {
        fs::remove_dir_all(&target)?;
    }
    copy_tree(&source, &target)?;
    Ok(())
}

/// Copies the app's files (not bytecode caches) from `from` into `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), Box<dyn Error>> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let path = entry.path();
        let kind = entry.file_type()?;
        if name == "__pycache__" || path.extension().is_some_and(|e| e == "pyc") {
            continue;
        }
        if kind.is_dir() {
            copy_tree(&path, &to.join(&name))?;
        } else if kind.is_file() {
            fs::copy(&path, to.join(&name))?;
        }
    }
    Ok(())
}
