//! The binding constructs of the scope analysis, in pyflakes' order: assignments and
//! `__all__`, imports, `global`, `try`/`except`, `match` patterns, type parameters, functions,
//! lambdas and classes.

use tree_sitter::Node;

use super::python_scope::{
    Analyzer, Base, BaseEvent, ExportOp, Item, Mode, Phase, ScopeKind, UnitDiagnostic, Work,
};
use super::python_tokens::SyntaxProblem;
use super::text::{end_of_file, token_after};

/// A function's or lambda's parameters: the names to bind in its body, and the annotations
/// and defaults evaluated where it is defined.
struct Parameters<'tree> {
    names: Vec<String>,
    annotations: Vec<Node<'tree>>,
    defaults: Vec<Node<'tree>>,
}

impl<'tree> Analyzer<'_, 'tree> {
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

    /// The annotation, then the value, then the targets (pyflakes' `ANNASSIGN` and `ASSIGN`).
    /// An annotation without a value binds nothing a load can see.
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
        let mut works = Vec::new();
        if let Some(annotation) = node.child_by_field_name("type") {
            works.push(Work::Visit(Item {
                node: annotation,
                mode: Mode::Load,
                annotation: true,
                ..item
            }));
        }
        if let Some(right) = right {
            works.push(Self::visit_of(item, right, Mode::Load, item.scope));
        }
        let annotation_only = right.is_none() && left.is_some_and(|l| l.kind() == "identifier");
        let at_base = item.scope == 0 && self.phase == Phase::Immediate;
        match left {
            Some(left) if annotation_only && at_base => {
                let name = self.text(left).to_owned();
                self.facts.events.push(BaseEvent::Annotate(name));
            }
            Some(_) if annotation_only => {}
            Some(left) => works.push(Self::visit_of(item, left, Mode::Store, item.scope)),
            None => {}
        }
        self.push_in_order(works);
    }

    /// `x += v`: `x` is loaded, then `v`, then `x` is stored (pyflakes' `AUGASSIGN`).
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
        let mut works = Vec::new();
        if let Some(left) = left.filter(|l| l.kind() == "identifier") {
            works.push(Self::visit_of(item, left, Mode::Load, item.scope));
        }
        if let Some(right) = right {
            works.push(Self::visit_of(item, right, Mode::Load, item.scope));
        }
        if let Some(left) = left {
            works.push(Self::visit_of(item, left, Mode::Store, item.scope));
        }
        self.push_in_order(works);
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
        let at_base = item.scope == 0 && self.phase == Phase::Immediate;
        if node.kind() == "future_import_statement" {
            let mut cursor = node.walk();
            let names: Vec<Node<'tree>> = node.named_children(&mut cursor).collect();
            for child in names {
                if at_base && self.text(child) == "annotations" {
                    self.facts.events.push(BaseEvent::FutureAnnotations);
                }
                self.bind_import(child, item.scope);
            }
            return;
        }
        let mut cursor = node.walk();
        if at_base
            && node
                .named_children(&mut cursor)
                .any(|c| c.kind() == "wildcard_import")
        {
            self.facts.events.push(BaseEvent::StarImport);
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

    /// `global`/`nonlocal` below the module scope binds the names in every enclosing scope
    /// and in the module, and pyflakes then drops every undefined-name report for them; at
    /// module level it does nothing.
    pub(super) fn visit_global(&mut self, item: Item<'tree>) {
        if item.scope == 0 && self.base == Base::Module {
            return;
        }
        let mut cursor = item.node.walk();
        let names: Vec<String> = item
            .node
            .named_children(&mut cursor)
            .filter(|c| c.kind() == "identifier")
            .map(|c| self.text(c).to_owned())
            .collect();
        for name in names {
            let mut scope = item.scope;
            while scope != 0 {
                self.bind(scope, &name);
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
            let message = "SyntaxError: expected 'except' or 'finally' block";
            match token_after(self.src, node.end_byte()) {
                // A dedent past the `try`: CPython points at the DEDENT token, one left.
                Some((row, col)) if col < node.start_position().column => {
                    let row = row.saturating_sub(self.base_row);
                    let problem = SyntaxProblem::new(row, col, message).shifted_left();
                    self.facts.syntax.push(problem);
                }
                _ => self.syntax_after(node, message),
            }
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

    /// `except E as name:` binds `name` for the handler only; the exception types and the
    /// handler's body run in between (pyflakes' `EXCEPTHANDLER`).
    pub(super) fn visit_except(&mut self, item: Item<'tree>) {
        let node = item.node;
        let value = node.child_by_field_name("value");
        // `except E as name` parses as a value `E as name` (an `as_pattern`), or with the
        // name in an `alias` field.
        let pattern = value.filter(|value| value.kind() == "as_pattern");
        let (types, alias) = match pattern {
            Some(pattern) => (
                pattern.named_child(0),
                pattern
                    .child_by_field_name("alias")
                    .and_then(|alias| alias.named_child(0).or(Some(alias))),
            ),
            None => (value, node.child_by_field_name("alias")),
        };
        let skipped = [value, node.child_by_field_name("alias")];
        let mut cursor = node.walk();
        let rest: Vec<Node<'tree>> = node
            .named_children(&mut cursor)
            .filter(|child| !skipped.contains(&Some(*child)))
            .collect();
        let name = alias
            .filter(|alias| alias.kind() == "identifier")
            .map(|alias| self.text(alias).to_owned());
        let mut works = Vec::new();
        if let Some(name) = &name {
            works.push(Work::ExceptEnter {
                scope: item.scope,
                name: name.clone(),
            });
        }
        works.extend(types.map(|types| Self::visit_of(item, types, Mode::Load, item.scope)));
        works.extend(
            rest.into_iter()
                .map(|child| Self::visit_of(item, child, Mode::Load, item.scope)),
        );
        if let Some(name) = name {
            works.push(Work::ExceptExit {
                scope: item.scope,
                name,
            });
        }
        self.push_in_order(works);
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
                    Some(first) => self.load(first, item),
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
                self.stack.extend(queued.into_iter().rev().map(Work::Visit));
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

    /// `type X[T] = value`: `X` is bound; the value is evaluated lazily, so it is deferred.
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
        if let Some(value) = node.child_by_field_name("right") {
            let body = vec![Self::visit_of(item, value, Mode::Load, scope)];
            self.deferred.push_back(body);
        }
    }

    /// Binds PEP 695 type parameters in `scope`; their bounds and constraints are evaluated
    /// lazily, so they are deferred.
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
            if let Some(rest) = rest {
                let body = vec![Self::visit_of(item, rest, Mode::Load, scope)];
                self.deferred.push_back(body);
            }
        }
    }

    /// Decorators come first (they precede the definition); then the type parameters, the
    /// annotations and the defaults where the function is defined, then its name is bound;
    /// the body, with the parameters bound, is deferred (pyflakes' `FUNCTIONDEF`/`LAMBDA`).
    pub(super) fn visit_function(&mut self, item: Item<'tree>) {
        let node = item.node;
        let mut outer = item.scope;
        if let Some(params) = node.child_by_field_name("type_parameters") {
            outer = self.new_scope(ScopeKind::Type, item.scope);
            self.bind_type_params(params, outer, item);
        }
        let scope = self.new_scope(ScopeKind::Function, outer);
        let mut parameters = self.parameters(node.child_by_field_name("parameters"), node, item);
        parameters
            .annotations
            .extend(node.child_by_field_name("return_type"));
        let name = node
            .child_by_field_name("name")
            .map(|name| self.text(name).to_owned());
        let mut works: Vec<Work<'tree>> = parameters
            .annotations
            .iter()
            .map(|&annotation| {
                Work::Visit(Item {
                    node: annotation,
                    mode: Mode::Load,
                    scope: outer,
                    annotation: true,
                    ..item
                })
            })
            .collect();
        works.extend(
            parameters
                .defaults
                .iter()
                .map(|&default| Self::visit_of(item, default, Mode::Load, outer)),
        );
        works.push(Work::Defer(Self::body(
            item,
            &parameters.names,
            node.child_by_field_name("body"),
            scope,
        )));
        if let Some(name) = name {
            works.push(Work::Bind {
                scope: item.scope,
                name,
            });
        }
        self.push_in_order(works);
    }

    /// Defaults where the lambda is; its body, with the parameters bound, deferred.
    pub(super) fn visit_lambda(&mut self, item: Item<'tree>) {
        let node = item.node;
        let scope = self.new_scope(ScopeKind::Function, item.scope);
        let parameters = self.parameters(node.child_by_field_name("parameters"), node, item);
        let mut works: Vec<Work<'tree>> = parameters
            .defaults
            .iter()
            .map(|&default| Self::visit_of(item, default, Mode::Load, item.scope))
            .collect();
        works.push(Work::Defer(Self::body(
            item,
            &parameters.names,
            node.child_by_field_name("body"),
            scope,
        )));
        self.push_in_order(works);
    }

    /// A deferred body: bind the parameters, then walk the body, outside any `try` of the
    /// definition (pyflakes runs deferred bodies with no `except` handlers in force).
    fn body(
        item: Item<'tree>,
        names: &[String],
        body: Option<Node<'tree>>,
        scope: usize,
    ) -> Vec<Work<'tree>> {
        let mut works: Vec<Work<'tree>> = names
            .iter()
            .map(|name| Work::Bind {
                scope,
                name: name.clone(),
            })
            .collect();
        if let Some(body) = body {
            works.push(Work::Visit(Item {
                node: body,
                mode: Mode::Load,
                scope,
                guarded: false,
                annotation: false,
                ..item
            }));
        }
        works
    }

    /// Reads a parameter list: names, annotations and defaults, reporting duplicate
    /// arguments and non-default-after-default parameters.
    fn parameters(
        &mut self,
        params: Option<Node<'tree>>,
        function: Node<'_>,
        item: Item<'_>,
    ) -> Parameters<'tree> {
        let mut parameters = Parameters {
            names: Vec::new(),
            annotations: Vec::new(),
            defaults: Vec::new(),
        };
        let Some(params) = params else {
            return parameters;
        };
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
            parameters.defaults.extend(default);
            parameters.annotations.extend(annotation);
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
            self.collect_param_names(name, &mut parameters.names);
        }
        let (row, col) = self.position(function);
        for (index, name) in parameters.names.iter().enumerate() {
            if parameters.names[..index].contains(name) && !item.unseen {
                self.facts.diagnostics.push(UnitDiagnostic {
                    row,
                    col,
                    code: "F831",
                    message: format!("duplicate argument '{name}' in function definition"),
                });
            }
        }
        parameters
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

    /// Decorators come first (they precede the definition); then the type parameters, the
    /// bases and keywords, the body in the class's scope, and last the class's name
    /// (pyflakes' `CLASSDEF`). A class unit's header leaves out the body, and the name is
    /// bound by the module pass after the members.
    pub(super) fn visit_class(&mut self, item: Item<'tree>) {
        let node = item.node;
        let name = node
            .child_by_field_name("name")
            .map(|name| self.text(name).to_owned());
        let mut outer = item.scope;
        if let Some(params) = node.child_by_field_name("type_parameters") {
            outer = self.new_scope(ScopeKind::Type, item.scope);
            self.bind_type_params(params, outer, item);
        }
        let scope = self.new_scope(ScopeKind::Class, outer);
        let header = self.header_only && item.scope == 0;
        let mut works = Vec::new();
        if let Some(bases) = node.child_by_field_name("superclasses") {
            works.push(Self::visit_of(item, bases, Mode::Load, outer));
        }
        if header {
            self.facts.class_name = name;
        } else {
            if let Some(body) = node.child_by_field_name("body") {
                works.push(Self::visit_of(item, body, Mode::Load, scope));
            }
            if let Some(name) = name {
                works.push(Work::Bind {
                    scope: item.scope,
                    name,
                });
            }
        }
        self.push_in_order(works);
    }
}
