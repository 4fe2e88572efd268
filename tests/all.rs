//! All integration tests in one binary: they drive the real `agentci`
//! binary against fake servers on 127.0.0.1 and temporary workspaces.

mod suite;
