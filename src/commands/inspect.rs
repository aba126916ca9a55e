//! `aci inspect`: serve a run's pages, or write them as a static site.

use std::process::ExitCode;
use std::sync::Arc;

use super::Failure;
use crate::cli::InspectArgs;

/// `aci inspect`: serve the pages of DIR until Ctrl-C, or write them as a static site.
pub async fn inspect(args: InspectArgs) -> Result<ExitCode, Failure> {
    let hint = "DIR is the --output of aci batch, aci eval or aci ablate, SWE-agent or mini-swe-agent trajectories, or a .traj or .traj.json file";
    let site = match args.dirs.as_slice() {
        [dir] => {
            let site = aci::inspect::Site::open(dir, args.eval.as_deref())
                .map_err(|e| Failure::new(e.to_string()).hint(hint))?;
            match (site.eval_dir(), &args.eval) {
                (Some(eval), None) => eprintln!("evaluation: {}", eval.display()),
                (None, None) if !dir.join("ablation.json").is_file() => {
                    eprintln!(
                        "no evaluation found next to {}; pass --eval DIR to show one",
                        dir.display()
                    );
                }
                _ => {}
            }
            site
        }
        dirs => {
            if args.eval.is_some() {
                return Err(Failure::new("--eval names the evaluation of one run").hint(
                    "with several runs, each finds the evaluation next to it: pass the evaluations themselves, or one DIR with --eval",
                ));
            }
            let site = aci::inspect::Site::open_many(dirs)
                .map_err(|e| Failure::new(e.to_string()).hint(hint))?;
            for (name, run) in site.runs() {
                match &run.eval {
                    Some(eval) => eprintln!(
                        "{name}: {} (evaluation: {})",
                        run.dir.display(),
                        eval.display()
                    ),
                    None => eprintln!(
                        "{name}: {} (no evaluation found next to it)",
                        run.dir.display()
                    ),
                }
            }
            site
        }
    };
    let site = Arc::new(site);
    if let Some(out) = args.static_out {
        let exporter = Arc::clone(&site);
        let target = out.clone();
        let pages = tokio::task::spawn_blocking(move || exporter.export(&target))
            .await
            .map_err(|e| Failure::new(format!("the export stopped: {e}")))??;
        println!("wrote {pages} pages to {}", out.display());
        eprintln!("open {} in a browser", out.join("index.html").display());
        return Ok(ExitCode::SUCCESS);
    }
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .map_err(|e| {
            Failure::new(format!("cannot listen on {}:{}: {e}", args.host, args.port))
                .hint("choose another port with --port N (0 picks a free one)")
        })?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::new(format!("cannot read the listening address: {e}")))?;
    if !address.ip().is_loopback() {
        eprintln!(
            "warning: listening on {address}: whoever can reach it can read these trajectories"
        );
    }
    // Read the summaries now, so the first page of a big run comes from the cache.
    let warm = Arc::clone(&site);
    tokio::task::spawn_blocking(move || warm.warm());
    let url = format!("http://{address}/");
    println!("serving {} at {url}", site.root().display());
    eprintln!("press Ctrl-C to stop");
    if args.open {
        open_in_browser(&url);
    }
    tokio::select! {
        served = aci::inspect::server::serve(site, listener) => {
            served.map_err(|e| Failure::new(format!("the server stopped: {e}")))?;
        }
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` with `$BROWSER`, else the desktop's opener; a failure is a warning only.
fn open_in_browser(url: &str) {
    let opener = std::env::var("BROWSER").unwrap_or_else(|_| {
        if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        }
        .to_owned()
    });
    let started = std::process::Command::new(&opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(error) = started {
        eprintln!("warning: cannot start {opener} to open {url}: {error}");
    }
}
