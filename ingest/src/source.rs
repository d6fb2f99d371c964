//! The five sources and where each keeps its files on this machine.

use std::path::{Path, PathBuf};

/// An agent whose logs Origin reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI Codex CLI.
    Codex,
    /// Cursor.
    Cursor,
    /// Z.ai ZCode.
    Zcode,
    /// xAI Grok Build.
    Grok,
}

impl Source {
    /// Every source, in display order.
    pub const ALL: [Source; 5] = [Source::ClaudeCode, Source::Codex, Source::Cursor, Source::Zcode, Source::Grok];

    /// The source id used in event ids and results.
    pub fn id(self) -> &'static str {
        match self {
            Source::ClaudeCode => "claude-code",
            Source::Codex => "codex",
            Source::Cursor => "cursor",
            Source::Zcode => "zcode",
            Source::Grok => "grok",
        }
    }

    /// The source for an id.
    pub fn from_id(id: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|s| s.id() == id)
    }
}

/// Where each agent keeps its files: under `$HOME` as each lays them out, or where its own
/// override variable points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Homes {
    /// The user's home directory.
    pub home: PathBuf,
    /// `CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude: PathBuf,
    /// `CODEX_HOME`, else `~/.codex`.
    pub codex: PathBuf,
    /// `~/.cursor` (Cursor has no override variable for it).
    pub cursor: PathBuf,
    /// `ZCODE_HOME`, else `~/.zcode`.
    pub zcode: PathBuf,
    /// `GROK_HOME`, else `~/.grok`.
    pub grok: PathBuf,
}

/// `p` made absolute against the current folder, as written otherwise (no link resolved, no
/// `..` taken out): a log file is known by its path, so the same folder given once relative
/// and once absolute (`--agents-home`, an override variable) must name its files alike, or
/// they would be read again as new files.
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

impl Homes {
    /// The default layout under `home` (made absolute), ignoring override variables.
    pub fn under(home: &Path) -> Homes {
        let home = absolute(home);
        Homes {
            home: home.to_path_buf(),
            claude: home.join(".claude"),
            codex: home.join(".codex"),
            cursor: home.join(".cursor"),
            zcode: home.join(".zcode"),
            grok: home.join(".grok"),
        }
    }

    /// The layout of this process's environment: `$HOME` and each agent's override variable
    /// (`None` when `HOME` is unset or empty).
    pub fn from_env() -> Option<Homes> {
        let home = PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?);
        Some(Homes::under(&home).with_overrides())
    }

    /// This layout with each agent's override variable set in the environment (not empty) in
    /// place of its folder.
    pub fn with_overrides(self) -> Homes {
        let mut h = self;
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(|v| absolute(Path::new(&v)));
        if let Some(p) = var("CLAUDE_CONFIG_DIR") {
            h.claude = p;
        }
        if let Some(p) = var("CODEX_HOME") {
            h.codex = p;
        }
        if let Some(p) = var("ZCODE_HOME") {
            h.zcode = p;
        }
        if let Some(p) = var("GROK_HOME") {
            h.grok = p;
        }
        h
    }
}
