//! Every integration test, in one binary: each file of this folder is the module of one concern
//! (`cli_*` run the plugin on files, `cluster_*` against the real control plane of
//! tools/testenv, the rest the docs, the release, the terminal and the architecture). One binary
//! links the crate once instead of once per file, and its tests share one pool of threads.
//! Run one concern with `tools/test.sh --test integration cli_offline::`.

mod support;

mod allocator_props;
mod architecture;
mod cilium_oracle;
mod cli_bombs;
mod cli_contract;
mod cli_edit_bombs;
mod cli_errors;
mod cli_exec;
mod cli_flags;
mod cli_fleet;
mod cli_help;
mod cli_hostile;
mod cli_inputs;
mod cli_migrate;
mod cli_offline;
mod cli_pipes;
mod cli_reserve;
mod cli_safety;
mod cli_scripts;
mod cli_serve;
mod cli_unknowns;
mod cli_views;
mod cluster_errors;
mod cluster_faults;
mod cluster_fleet;
mod cluster_ip;
mod cluster_kubeconfig;
mod cluster_migrate;
mod cluster_modes;
mod cluster_rbac;
mod cluster_read;
mod cluster_reserve;
mod cluster_safety;
mod cluster_secrets;
mod cluster_serve;
mod cluster_tables;
mod cluster_version;
mod cluster_watch;
mod decode_paths;
mod deploy;
mod docs_inputs;
mod docs_output;
mod example_figures;
mod operator_loop;
mod oracle;
mod packaging;
mod problem_kinds;
mod release;
mod terminal;
mod terminal_map;
mod terminal_width;
