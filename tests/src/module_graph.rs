//! The circle finder of the architecture tests (docs/architecture.md, Layout: no two modules
//! import each other): review-server's and image-pipeline's tests build their module graphs
//! their own way and share this search.

use std::collections::{BTreeMap, BTreeSet};

/// The first circle of `graph` (module -> the modules it imports) found by a depth-first
/// search, as `a -> b -> a`; None when there is none.
pub fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<&'a str>,
        path: &mut Vec<&'a str>,
    ) -> Option<String> {
        if let Some(start) = path.iter().position(|n| *n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node);
            return Some(circle.join(" -> "));
        }
        if done.contains(node) {
            return None;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}
