//! What the rules read in a Python file, from tree-sitter-python's parse: imports, resolved
//! references, calls and the calls inside their arguments, string literals (docstrings
//! left out), keyed reads (`os.environ["X"]`, `os.getenv("X")`) and where the parse
//! failed. Every walk is iterative: a deeply nested file cannot overflow the stack.

use std::collections::BTreeMap;

use tree_sitter::{Node, Parser, Tree};

/// Why a Python file could not be parsed at all (a file with syntax errors still parses:
/// tree-sitter recovers, and the rule `python.syntax-error` reports where).
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The grammar and the tree-sitter runtime do not fit together (a build problem).
    #[error("the tree-sitter Python grammar does not load: {0}")]
    Grammar(#[from] tree_sitter::LanguageError),
    /// tree-sitter returned no tree.
    #[error("tree-sitter returned no tree")]
    NoTree,
}

/// Parses `source` as Python.
///
/// Errors: [`ParseError`].
pub(crate) fn parse(source: &str) -> Result<Tree, ParseError> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_python::LANGUAGE.into())?;
    parser.parse(source, None).ok_or(ParseError::NoTree)
}

/// The longest attribute chain resolved to a dotted name; a longer one resolves to none.
const MAX_CHAIN: usize = 64;

/// A call: its resolved name, its method name (the last attribute when the callee is an
/// attribute), and the call whose arguments hold it.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) line: usize,
    pub(crate) name: Option<String>,
    pub(crate) method: Option<String>,
    pub(crate) inside: Option<usize>,
}

/// What the rules read in one file; lines are 1-based.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// Imported modules, fully dotted (`from a import b` gives `a` and `a.b`).
    pub(crate) imports: Vec<(usize, String)>,
    /// Names and attribute chains, resolved through the file's imports.
    pub(crate) references: Vec<(usize, String)>,
    pub(crate) calls: Vec<Call>,
    /// String literals: the line they start on and their contents between the quotes.
    pub(crate) strings: Vec<(usize, String)>,
    /// `(line, resolved name, key)` of `name("key", …)` and `name["key"]`.
    pub(crate) keyed: Vec<(usize, String, String)>,
    /// The first line with a syntax error.
    pub(crate) syntax_error_line: Option<usize>,
}

fn line_of(node: Node<'_>) -> usize {
    node.start_position().row + 1
}

fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

/// The contents of a `string` node between its quotes.
pub(crate) fn string_contents<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let start = children
        .iter()
        .find(|c| c.kind() == "string_start")
        .map_or(node.start_byte(), |c| c.end_byte());
    let end = children
        .iter()
        .rev()
        .find(|c| c.kind() == "string_end")
        .map_or(node.end_byte(), |c| c.start_byte());
    source.get(start..end.max(start)).unwrap_or("")
}

/// Whether `node` is a statement made of one string alone: a docstring, or a string used as
/// a comment; either way it does nothing.
pub(crate) fn is_docstring(node: Node<'_>) -> bool {
    node.kind() == "expression_statement"
        && node.named_child_count() == 1
        && node.named_child(0).is_some_and(|c| c.kind() == "string")
}

/// The local names the file's imports bind, each to the dotted name it stands for.
struct Aliases(BTreeMap<String, String>);

impl Aliases {
    fn resolve(&self, name: &str) -> String {
        self.0.get(name).cloned().unwrap_or_else(|| name.to_owned())
    }

    /// The resolved dotted name of an identifier or attribute chain.
    fn dotted(&self, node: Node<'_>, source: &str) -> Option<String> {
        let mut parts: Vec<&str> = Vec::new();
        let mut current = node;
        loop {
            match current.kind() {
                "identifier" => {
                    let mut name = self.resolve(text(current, source));
                    for part in parts.iter().rev() {
                        name.push('.');
                        name.push_str(part);
                    }
                    return Some(name);
                }
                "attribute" if parts.len() < MAX_CHAIN => {
                    parts.push(text(current.child_by_field_name("attribute")?, source));
                    current = current.child_by_field_name("object")?;
                }
                _ => return None,
            }
        }
    }
}

/// Every node below `root` in source order (pre-order), without recursion.
fn preorder(root: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        out.push(node);
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// The modules one import statement names and the local names it binds.
fn read_import(
    node: Node<'_>,
    source: &str,
    imports: &mut Vec<(usize, String)>,
    aliases: &mut Aliases,
) {
    let line = line_of(node);
    let mut cursor = node.walk();
    let from = node
        .child_by_field_name("module_name")
        .filter(|m| m.kind() == "dotted_name")
        .map(|m| text(m, source).to_owned());
    if node.kind() == "import_from_statement" {
        match &from {
            Some(module) => imports.push((line, module.clone())),
            // A relative import names the submission's own modules.
            None => return,
        }
    }
    for name in node.children_by_field_name("name", &mut cursor) {
        let (dotted, alias) = match name.kind() {
            "aliased_import" => (
                name.child_by_field_name("name").map(|n| text(n, source)),
                name.child_by_field_name("alias").map(|n| text(n, source)),
            ),
            _ => (Some(text(name, source)), None),
        };
        let Some(dotted) = dotted else { continue };
        let full = match &from {
            Some(module) => format!("{module}.{dotted}"),
            None => dotted.to_owned(),
        };
        imports.push((line, full.clone()));
        match (alias, &from) {
            (Some(alias), _) => {
                aliases.0.insert(alias.to_owned(), full);
            }
            (None, Some(_)) => {
                aliases.0.insert(dotted.to_owned(), full);
            }
            // `import a.b` binds `a`, which stands for itself.
            (None, None) => {}
        }
    }
}

/// Whether an identifier, the child of `parent` under `field`, names nothing the file
/// refers to: a definition, a parameter, a keyword or the attribute of an attribute.
fn is_binding(parent: Node<'_>, field: Option<&str>) -> bool {
    match parent.kind() {
        "attribute" => field == Some("attribute"),
        "keyword_argument"
        | "function_definition"
        | "class_definition"
        | "default_parameter"
        | "typed_default_parameter" => field == Some("name"),
        "parameters"
        | "lambda_parameters"
        | "typed_parameter"
        | "list_splat_pattern"
        | "dictionary_splat_pattern" => true,
        _ => false,
    }
}

/// The first string literal argument of a call, or the string key of a subscript.
fn literal_key(node: Node<'_>, source: &str) -> Option<String> {
    let key = match node.kind() {
        "call" => node.child_by_field_name("arguments")?.named_child(0)?,
        _ => node.child_by_field_name("subscript")?,
    };
    let mut cursor = key.walk();
    let interpolated = key
        .children(&mut cursor)
        .any(|c| c.kind() == "interpolation");
    (key.kind() == "string" && !interpolated).then(|| string_contents(key, source).to_owned())
}

/// Reads the facts of one Python source.
///
/// Errors: [`ParseError`] when no tree comes back.
pub(crate) fn facts(source: &str) -> Result<Facts, ParseError> {
    let tree = parse(source)?;
    let root = tree.root_node();
    let mut facts = Facts::default();
    let mut aliases = Aliases(BTreeMap::new());
    let nodes = preorder(root);
    for node in &nodes {
        if matches!(node.kind(), "import_statement" | "import_from_statement") {
            read_import(*node, source, &mut facts.imports, &mut aliases);
        }
        if facts.syntax_error_line.is_none() && (node.is_error() || node.is_missing()) {
            facts.syntax_error_line = Some(line_of(*node));
        }
    }
    if facts.syntax_error_line.is_none() && root.has_error() {
        facts.syntax_error_line = Some(1);
    }

    // One walk with context: whether an identifier is a reference, and which call's
    // arguments the node is inside.
    let mut stack: Vec<(Node<'_>, bool, Option<usize>)> = vec![(root, true, None)];
    while let Some((node, reference, inside)) = stack.pop() {
        let line = line_of(node);
        let mut inside_children = inside;
        match node.kind() {
            "import_statement" | "import_from_statement" | "comment" => continue,
            "expression_statement" if is_docstring(node) => continue,
            "identifier" => {
                if reference {
                    facts
                        .references
                        .push((line, aliases.resolve(text(node, source))));
                }
                continue;
            }
            "attribute" => {
                if let Some(name) = aliases.dotted(node, source) {
                    facts.references.push((line, name));
                }
            }
            "string" => {
                facts
                    .strings
                    .push((line, string_contents(node, source).to_owned()));
            }
            "subscript" => {
                if let (Some(name), Some(key)) = (
                    node.child_by_field_name("value")
                        .and_then(|v| aliases.dotted(v, source)),
                    literal_key(node, source),
                ) {
                    facts.keyed.push((line, name, key));
                }
            }
            "call" => {
                let function = node.child_by_field_name("function");
                let name = function.and_then(|f| aliases.dotted(f, source));
                let method = function
                    .filter(|f| f.kind() == "attribute")
                    .and_then(|f| f.child_by_field_name("attribute"))
                    .map(|a| text(a, source).to_owned());
                if let (Some(name), Some(key)) = (&name, literal_key(node, source)) {
                    if matches!(name.as_str(), "__import__" | "importlib.import_module") {
                        facts.imports.push((line, key.clone()));
                    }
                    facts.keyed.push((line, name.clone(), key));
                }
                facts.calls.push(Call {
                    line,
                    name,
                    method,
                    inside,
                });
                inside_children = Some(facts.calls.len() - 1);
            }
            _ => {}
        }
        let mut cursor = node.walk();
        let mut children = Vec::new();
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                let field = cursor.field_name();
                // Only a call's arguments are inside it, not its callee.
                let child_inside = if node.kind() == "call" && field != Some("arguments") {
                    inside
                } else {
                    inside_children
                };
                let is_reference = !(child.kind() == "identifier" && is_binding(node, field));
                children.push((child, is_reference, child_inside));
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        stack.extend(children.into_iter().rev());
    }
    Ok(facts)
}
