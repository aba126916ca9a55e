//! The binding constructs of the scope analysis: calls, assignments and `__all__`, imports,
//! `global`, `try`, `match` patterns, type parameters, functions, lambdas and classes.

use tree_sitter::Node;

use super::python_scope::{Analyzer, Base, ExportOp, Item, Mode, ScopeKind, UnitDiagnostic};
use super::python_tokens::SyntaxProblem;
use super::text::{end_of_file, token_after};

impl<'tree> Analyzer<'_, 'tree> {
    /// `globals()`, `locals()` or `vars()` with no arguments.
    pub(super) fn is_namespace_call(&self, node: Node<'_>) -> bool {
        if node.kind() != "call" {
            return false;
        }
        let function = node.child_by_field_name("function").map(|f| self.text(f));
        let arguments = node.child_by_field_name("arguments");
        matches!(function, Some("globals" | "locals" | "vars"))
            && arguments.is_some_and(|a| a.named_child_count() == 0)
    }

    pub(super) fn visit_call(&mut self, item: Item<'tree>) {
        let node = item.node;
        let function = node.child_by_field_name("function");
        let name = function.map(|f| self.text(f)).unwrap_or("");
        let first_arg = node
            .child_by_field_name("arguments")
            .and_then(|a| a.named_child(0));
        let writes_builtins = name == "setattr"
            && first_arg.is_some_and(|a| matches!(self.text(a), "builtins" | "__builtins__"));
        if matches!(name, "exec" | "execfile") || writes_builtins {
            self.facts.dynamic = true;
        }
        if let Some(function) = function.filter(|f| f.kind() == "attribute") {
            let method = function
                .child_by_field_name("attribute")
                .map(|a| self.text(a));
            let object = function.child_by_field_name("object");
            let mutating = matches!(
                method,
                Some(
                    "update"
                        | "setdefault"
                        | "__setitem__"
                        | "__delitem__"
                        | "pop"
                        | "popitem"
                        | "clear"
                )
            );
            if mutating && object.is_some_and(|o| self.is_namespace_call(o)) {
                self.facts.dynamic = true;
            }
        }
        self.push_children(item, Mode::Load);
    }

    /// CPython's parser rejects a positional argument after keyword arguments.
    pub(super) fn check_arguments(&mut self, node: Node<'_>) {
        let (mut keyword, mut unpacked) = (false, false);
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "keyword_argument" => keyword = true,
                "dictionary_splat" => unpacked = true,
                "list_splat" | "comment" => {}
                _ if keyword || unpacked => {
                    let message = if unpacked {
                        "SyntaxError: positional argument follows keyword argument unpacking"
                    } else {
                        "SyntaxError: positional argument follows keyword argument"
                    };
                    let end = node.end_position();
                    let row = end.row.saturating_sub(self.base_row);
                    let col = end.column.saturating_sub(1);
                    self.facts
                        .syntax
                        .push(SyntaxProblem::new(row, col, message));
                    return;
                }
                _ => {}
            }
        }
    }

    pub(super) fn visit_assignment(&mut self, item: Item<'tree>) {
        let node = item.node;
        let left = node.child_by_field_name("left");
        let right = node.child_by_field_name("right");
        if item.scope == 0
            && self.base == Base::Module
            && left.is_some_and(|l| self.text(l) == "__all__" && l.kind() == "identifier")
        {
            let names = right.map(|r| self.export_names(r)).unwrap_or_default();
            self.export(node, false, names);
        }
        self.push_node(item, right, Mode::Load, item.scope);
        self.push_node(
            item,
            node.child_by_field_name("type"),
            Mode::Load,
            item.scope,
        );
        self.push_node(item, left, Mode::Store, item.scope);
    }

    pub(super) fn visit_augmented(&mut self, item: Item<'tree>) {
        let node = item.node;
        let left = node.child_by_field_name("left");
        let right = node.child_by_field_name("right");
        if item.scope == 0 && self.base == Base::Module {
            let is_all = left.filter(|l| self.text(*l) == "__all__" && l.kind() == "identifier");
            let operator = node.child_by_field_name("operator").map(|o| self.text(o));
            if let (Some(_), Some("+=")) = (is_all, operator) {
                let names = right.map(|r| self.export_names(r)).unwrap_or_default();
                self.export(node, true, names);
            }
        }
        self.push_node(item, right, Mode::Load, item.scope);
        self.push_node(item, left, Mode::Load, item.scope);
    }

    pub(super) fn export(&mut self, statement: Node<'_>, extend: bool, names: Vec<String>) {
        let (row, col) = self.position(statement);
        self.facts.exports.push(ExportOp {
            extend,
            names,
            row,
            col,
            byte: statement.start_byte(),
        });
    }

    /// The string names of an `__all__` value, as pyflakes' `ExportBinding` reads them.
    pub(super) fn export_names(&self, value: Node<'_>) -> Vec<String> {
        let mut names = Vec::new();
        let mut current = value;
        loop {
            match current.kind() {
                "list" | "tuple" => {
                    self.collect_strings(current, &mut names);
                    break;
                }
                "binary_operator" => {
                    let right = current.child_by_field_name("right");
                    let Some(right) = right.filter(|r| matches!(r.kind(), "list" | "tuple")) else {
                        break;
                    };
                    self.collect_strings(right, &mut names);
                    match current.child_by_field_name("left") {
                        Some(left) => current = left,
                        None => break,
                    }
                    if !matches!(current.kind(), "binary_operator" | "list" | "tuple") {
                        break;
                    }
                }
                _ => break,
            }
        }
        names
    }

    pub(super) fn collect_strings(&self, list: Node<'_>, names: &mut Vec<String>) {
        let mut cursor = list.walk();
        for element in list.named_children(&mut cursor) {
            if let Some(name) = self.plain_string(element) {
                names.push(name);
            }
        }
    }

    /// The value of a plain (non-f, non-bytes, escape-free) string literal.
    pub(super) fn plain_string(&self, node: Node<'_>) -> Option<String> {
        if node.kind() != "string" {
            return None;
        }
        let text = self.text(node);
        let quote_at = text.find(['\'', '"'])?;
        let prefix = text[..quote_at].to_ascii_lowercase();
        if prefix.contains('f') || prefix.contains('b') || text.contains('\\') {
            return None;
        }
        let body = &text[quote_at..];
        let quote_len = if body.starts_with("\"\"\"") || body.starts_with("'''") {
            3
        } else {
            1
        };
        let inner = body.get(quote_len..body.len().checked_sub(quote_len)?)?;
        Some(inner.to_owned())
    }

    pub(super) fn visit_import(&mut self, item: Item<'tree>) {
        let node = item.node;
        if node.kind() == "future_import_statement" {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                self.bind_import(child, item.scope);
            }
            return;
        }
        let mut cursor = node.walk();
        if node
            .named_children(&mut cursor)
            .any(|c| c.kind() == "wildcard_import")
        {
            self.facts.star_import = true;
        }
        let mut cursor = node.walk();
        let names: Vec<Node<'tree>> = node.children_by_field_name("name", &mut cursor).collect();
        for name in names {
            self.bind_import(name, item.scope);
        }
    }

    pub(super) fn bind_import(&mut self, name: Node<'_>, scope: usize) {
        let bound = match name.kind() {
            "aliased_import" => name.child_by_field_name("alias"),
            "dotted_name" => name.named_child(0),
            _ => None,
        };
        if let Some(bound) = bound {
            let text = self.text(bound).to_owned();
            self.bind(scope, &text);
        }
    }

    pub(super) fn visit_global(&mut self, item: Item<'tree>) {
        let mut cursor = item.node.walk();
        let names: Vec<String> = item
            .node
            .named_children(&mut cursor)
            .filter(|c| c.kind() == "identifier")
            .map(|c| self.text(c).to_owned())
            .collect();
        for name in names {
            let mut scope = item.scope;
            loop {
                self.bind(scope, &name);
                if scope == 0 {
                    break;
                }
                scope = self.scopes[scope].parent;
            }
            self.facts.module_binds.push(name);
        }
    }

    pub(super) fn visit_try(&mut self, item: Item<'tree>) {
        let node = item.node;
        let mut cursor = node.walk();
        let children: Vec<Node<'tree>> = node.named_children(&mut cursor).collect();
        let handlers = children
            .iter()
            .any(|c| matches!(c.kind(), "except_clause" | "except_group_clause"));
        let finally = children.iter().any(|c| c.kind() == "finally_clause");
        if !handlers && !finally {
            self.syntax_after(node, "SyntaxError: expected 'except' or 'finally' block");
        }
        let catches_name_error = children
            .iter()
            .filter(|c| c.kind() == "except_clause")
            .any(|c| self.catches_name_error(*c));
        let body = node.child_by_field_name("body");
        for child in children.into_iter().rev() {
            let guarded = if Some(child) == body {
                catches_name_error
            } else {
                item.guarded
            };
            self.push(Item {
                node: child,
                mode: Mode::Load,
                guarded,
                ..item
            });
        }
    }

    /// A problem reported at the first token after `node` (or the end of its last line).
    pub(super) fn syntax_after(&mut self, node: Node<'_>, message: &str) {
        let (row, col) =
            token_after(self.src, node.end_byte()).unwrap_or_else(|| end_of_file(self.src));
        let row = row.saturating_sub(self.base_row);
        self.facts
            .syntax
            .push(SyntaxProblem::new(row, col, message));
    }

    pub(super) fn catches_name_error(&self, clause: Node<'_>) -> bool {
        let Some(value) = clause.child_by_field_name("value") else {
            return false;
        };
        let value = if value.kind() == "as_pattern" {
            value.named_child(0).unwrap_or(value)
        } else {
            value
        };
        if self.text(value) == "NameError" {
            return true;
        }
        let mut cursor = value.walk();
        let elements: Vec<Node<'_>> = match value.kind() {
            "tuple" | "parenthesized_expression" => value.named_children(&mut cursor).collect(),
            _ => Vec::new(),
        };
        elements.iter().any(|e| self.text(*e) == "NameError")
    }

    pub(super) fn visit_pattern(&mut self, item: Item<'tree>) {
        let node = item.node;
        match node.kind() {
            "dotted_name" => {
                let single = node.named_child_count() == 1;
                match node.named_child(0) {
                    Some(first) if single => {
                        let name = self.text(first).to_owned();
                        self.bind(item.scope, &name);
                    }
                    Some(first) => self.load(first, item.scope, item.guarded),
                    None => {}
                }
            }
            "identifier" => {
                let name = self.text(node).to_owned();
                self.bind(item.scope, &name);
            }
            "class_pattern" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'tree>> = node.named_children(&mut cursor).collect();
                for (index, child) in children.into_iter().enumerate().rev() {
                    let mode = if index == 0 {
                        Mode::Load
                    } else {
                        Mode::Pattern
                    };
                    self.push(Item {
                        node: child,
                        mode,
                        ..item
                    });
                }
            }
            "keyword_pattern" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'tree>> = node.named_children(&mut cursor).skip(1).collect();
                for child in children.into_iter().rev() {
                    self.push(Item {
                        node: child,
                        mode: Mode::Pattern,
                        ..item
                    });
                }
            }
            "dict_pattern" => {
                let mut cursor = node.walk();
                let mut queued = Vec::new();
                for (index, child) in node.children(&mut cursor).enumerate() {
                    if !child.is_named() {
                        continue;
                    }
                    let index = u32::try_from(index).unwrap_or(u32::MAX);
                    let is_key = node.field_name_for_child(index) == Some("key");
                    let mode = if is_key { Mode::Load } else { Mode::Pattern };
                    queued.push(Item {
                        node: child,
                        mode,
                        ..item
                    });
                }
                self.stack.extend(queued);
            }
            "string"
            | "concatenated_string"
            | "integer"
            | "float"
            | "complex_pattern"
            | "true"
            | "false"
            | "none" => {}
            _ => self.push_children(item, Mode::Pattern),
        }
    }

    pub(super) fn visit_type_alias(&mut self, item: Item<'tree>) {
        let node = item.node;
        let left = node.child_by_field_name("left");
        let mut scope = item.scope;
        if let Some(left) = left {
            let generic = left.named_child(0).filter(|c| c.kind() == "generic_type");
            let name_node = generic
                .and_then(|g| g.named_child(0))
                .or_else(|| left.named_child(0));
            if let Some(name_node) = name_node {
                let name = self.text(name_node).to_owned();
                self.bind(item.scope, &name);
            }
            if let Some(params) = generic.and_then(|g| g.named_child(1)) {
                scope = self.new_scope(ScopeKind::Type, item.scope);
                self.bind_type_params(params, scope, item);
            }
        }
        self.push_node(item, node.child_by_field_name("right"), Mode::Load, scope);
    }

    /// Binds PEP 695 type parameters in `scope`; bounds and constraints are loads there.
    pub(super) fn bind_type_params(
        &mut self,
        params: Node<'tree>,
        scope: usize,
        item: Item<'tree>,
    ) {
        let mut cursor = params.walk();
        let types: Vec<Node<'tree>> = params.named_children(&mut cursor).collect();
        for param in types {
            let inner = param.named_child(0).unwrap_or(param);
            let (binder, rest) = match inner.kind() {
                "constrained_type" => (
                    inner.named_child(0).and_then(|t| t.named_child(0)),
                    inner.named_child(1),
                ),
                "splat_type" => (inner.named_child(0), None),
                _ => (Some(inner), None),
            };
            if let Some(binder) = binder.filter(|b| b.kind() == "identifier") {
                let name = self.text(binder).to_owned();
                self.bind(scope, &name);
                if self.header_only && item.scope == 0 {
                    self.facts.type_params.push(name);
                }
            }
            self.push_node(item, rest, Mode::Load, scope);
        }
    }

    pub(super) fn visit_function(&mut self, item: Item<'tree>) {
        let node = item.node;
        if let Some(name) = node.child_by_field_name("name") {
            let name = self.text(name).to_owned();
            self.bind(item.scope, &name);
        }
        let mut outer = item.scope;
        if let Some(params) = node.child_by_field_name("type_parameters") {
            outer = self.new_scope(ScopeKind::Type, item.scope);
            self.bind_type_params(params, outer, item);
        }
        let scope = self.new_scope(ScopeKind::Function, outer);
        let body_item = Item {
            guarded: false,
            ..item
        };
        self.push_node(
            body_item,
            node.child_by_field_name("body"),
            Mode::Load,
            scope,
        );
        self.push_node(
            item,
            node.child_by_field_name("return_type"),
            Mode::Load,
            outer,
        );
        if let Some(params) = node.child_by_field_name("parameters") {
            self.visit_parameters(
                params,
                node,
                scope,
                Item {
                    scope: outer,
                    ..item
                },
            );
        }
    }

    pub(super) fn visit_lambda(&mut self, item: Item<'tree>) {
        let node = item.node;
        let scope = self.new_scope(ScopeKind::Function, item.scope);
        let body_item = Item {
            guarded: false,
            ..item
        };
        self.push_node(
            body_item,
            node.child_by_field_name("body"),
            Mode::Load,
            scope,
        );
        if let Some(params) = node.child_by_field_name("parameters") {
            self.visit_parameters(params, node, scope, item);
        }
    }

    /// Binds parameters in `scope`, queues defaults and annotations in `outer.scope`, and
    /// reports duplicate arguments and non-default-after-default parameters.
    pub(super) fn visit_parameters(
        &mut self,
        params: Node<'tree>,
        function: Node<'_>,
        scope: usize,
        outer: Item<'tree>,
    ) {
        let mut names: Vec<String> = Vec::new();
        let (mut seen_default, mut seen_star) = (false, false);
        let mut cursor = params.walk();
        let children: Vec<Node<'tree>> = params.named_children(&mut cursor).collect();
        for param in children {
            let kind = param.kind();
            let (name, default, annotation) = match kind {
                "default_parameter" | "typed_default_parameter" => (
                    param.child_by_field_name("name"),
                    param.child_by_field_name("value"),
                    param.child_by_field_name("type"),
                ),
                "typed_parameter" => (
                    param.named_child(0),
                    None,
                    param.child_by_field_name("type"),
                ),
                _ => (Some(param), None, None),
            };
            self.push_node(outer, default, Mode::Load, outer.scope);
            self.push_node(outer, annotation, Mode::Load, outer.scope);
            let Some(name) = name else { continue };
            let is_star = matches!(name.kind(), "list_splat_pattern" | "keyword_separator");
            let is_plain = name.kind() == "identifier" && default.is_none();
            if is_plain && seen_default && !seen_star {
                self.syntax(
                    param,
                    "SyntaxError: non-default argument follows default argument",
                );
            }
            seen_default |= default.is_some();
            seen_star |= is_star || name.kind() == "dictionary_splat_pattern";
            self.collect_param_names(name, &mut names);
        }
        let (row, col) = self.position(function);
        for (index, name) in names.iter().enumerate() {
            self.bind(scope, name);
            if names[..index].contains(name) {
                self.facts.diagnostics.push(UnitDiagnostic {
                    row,
                    col,
                    code: "F831",
                    message: format!("duplicate argument '{name}' in function definition"),
                });
            }
        }
    }

    pub(super) fn collect_param_names(&self, node: Node<'_>, names: &mut Vec<String>) {
        match node.kind() {
            "identifier" => names.push(self.text(node).to_owned()),
            "list_splat_pattern" | "dictionary_splat_pattern" | "tuple_pattern" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.collect_param_names(child, names);
                }
            }
            _ => {}
        }
    }

    pub(super) fn visit_class(&mut self, item: Item<'tree>) {
        let node = item.node;
        if let Some(name) = node.child_by_field_name("name") {
            let name = self.text(name).to_owned();
            self.bind(item.scope, &name);
        }
        let mut outer = item.scope;
        if let Some(params) = node.child_by_field_name("type_parameters") {
            outer = self.new_scope(ScopeKind::Type, item.scope);
            self.bind_type_params(params, outer, item);
        }
        let scope = self.new_scope(ScopeKind::Class, outer);
        if !(self.header_only && item.scope == 0) {
            self.push_node(item, node.child_by_field_name("body"), Mode::Load, scope);
        }
        self.push_node(
            item,
            node.child_by_field_name("superclasses"),
            Mode::Load,
            outer,
        );
    }
}
