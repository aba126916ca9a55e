//! The rows of a Python text's function bodies, for the abbreviated view of a large file
//! (`aci.filemap`): tree-sitter's `(function_definition body: (_) @body)`, every function and
//! method, nested ones included.

use tree_sitter::Node;

use super::Language;
use super::syntax::new_parser;

/// The first and last row (0-based, inclusive) of every function body in `source`, in the
/// order of the tree (outer before inner). Empty when the grammar cannot be loaded.
pub fn python_function_bodies(source: &[u8]) -> Vec<(usize, usize)> {
    let Some(mut parser) = new_parser(Language::Python) else {
        return Vec::new();
    };
    let Some(tree) = parser.parse(source, None) else {
        return Vec::new();
    };
    let mut bodies = Vec::new();
    collect(tree.root_node(), &mut bodies);
    bodies
}

fn collect(node: Node<'_>, bodies: &mut Vec<(usize, usize)>) {
    if node.kind() == "function_definition"
        && let Some(body) = node.child_by_field_name("body")
    {
        bodies.push((body.start_position().row, body.end_position().row));
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect(child, bodies);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_body_is_found_with_its_rows_nested_ones_too() {
        let source = b"import os\n\ndef outer(a):\n    x = 1\n    def inner():\n        return 2\n    return x\n\nclass C:\n    def m(self):\n        pass\n";
        assert_eq!(
            python_function_bodies(source),
            vec![(3, 6), (5, 5), (10, 10)]
        );
    }
}
