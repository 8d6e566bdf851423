"""The Showcase category tree (schema 13) and the titles of its categories.

Titles come from schema 3 when upstream has it. Otherwise they are recovered from the
retired ``Data_Dictionary_Showcase.csv``, which lists for each field the path of
category titles down to its category (``UK Biobank Assessment Centre > Physical
measures > Anthropometry > Body size measures`` for category 100010):

* a category that holds fields in the dictionary gets the last element of its path
  (``legacy_leaf``: exact);
* a category above them gets the deepest path element shared by every dictionary path
  in its subtree (``legacy_ancestor``), but only when that prefix is strictly shorter
  than the paths of each of its children, so a category with a single titled child
  is not given the child's parent's title. The dictionary predates moves in the tree
  (Eye measures left Physical measures; Assay results was dissolved), and the
  shared-prefix rule is what stays right across such moves.

Paths are then rebuilt along the current tree from these titles; a category whose
chain has an untitled member keeps its title but no path.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from metabundle.errors import ParseError
from metabundle.schemas import arrow_schema
from metabundle.schemas.ukb import UKB_CATEGORY
from metabundle.sources.ukb.files import CATEGORY_TREE, CATEGORY_URL
from metabundle.sources.ukb.tsv import SOURCE

SEPARATOR = " > "


@dataclass(frozen=True)
class SchemaTitle:
    """A category as schema 3 describes it."""

    title: str | None
    description: str | None
    notes: str | None
    availability: int | None
    group_type: int | None


@dataclass
class CategoryTree:
    """Parent, children and sibling order of every category schema 13 places."""

    parent: dict[int, int] = field(default_factory=dict)
    order: dict[int, float | None] = field(default_factory=dict)
    children: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))

    @property
    def nodes(self) -> set[int]:
        return set(self.parent) | set(self.children)


def build_tree(
    edges: Iterable[tuple[int, int, float | None]], report: Callable[[str], None]
) -> CategoryTree:
    """The tree from (parent, child, order) rows; a child listed under several parents
    keeps the first by (order, parent) and the others are reported."""
    tree = CategoryTree()
    ranked = sorted(edges, key=lambda e: (e[1], e[2] is None, e[2] or 0.0, e[0]))
    dropped = 0
    for parent, child, order in ranked:
        if child in tree.parent:
            dropped += 1
            continue
        tree.parent[child] = parent
        tree.order[child] = order
        tree.children[parent].append(child)
    if dropped:
        report(f"{CATEGORY_TREE.key}: {dropped} extra parent links ignored")
    for kids in tree.children.values():
        kids.sort(key=lambda c: (tree.order[c] is None, tree.order[c] or 0.0, c))
    _check_acyclic(tree)
    return tree


def _check_acyclic(tree: CategoryTree) -> None:
    for start in tree.parent:
        seen = {start}
        node = start
        while node in tree.parent:
            node = tree.parent[node]
            if node in seen:
                reason = f"the category tree has a cycle through category {node}"
                raise ParseError(SOURCE, CATEGORY_TREE.key, reason)
            seen.add(node)


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    prefix: list[str] = []
    for parts in zip(*paths, strict=False):
        if len(set(parts)) != 1:
            break
        prefix.append(parts[0])
    return tuple(prefix)


def legacy_titles(
    tree: CategoryTree, leaf_paths: Mapping[int, tuple[str, ...]]
) -> dict[int, tuple[str, str]]:
    """(title, title_source) per category, recovered from the dictionary's paths."""
    below: dict[int, list[tuple[str, ...]]] = {}

    def paths_below(category: int) -> list[tuple[str, ...]]:
        if category not in below:
            own = [leaf_paths[category]] if category in leaf_paths else []
            below[category] = own + [
                p for child in tree.children.get(category, []) for p in paths_below(child)
            ]
        return below[category]

    def own_path(category: int) -> tuple[str, ...]:
        return leaf_paths.get(category) or _common_prefix(paths_below(category))

    titles = {c: (path[-1], "legacy_leaf") for c, path in leaf_paths.items() if path}
    for category in sorted(tree.nodes - set(leaf_paths)):
        found = paths_below(category)
        prefix = _common_prefix(found) if found else ()
        children = [c for c in tree.children.get(category, []) if paths_below(c)]
        if prefix and all(len(prefix) < len(own_path(c)) for c in children):
            titles[category] = (prefix[-1], "legacy_ancestor")
    return titles


def _paths(tree: CategoryTree, titles: Mapping[int, str]) -> dict[int, tuple[str | None, int]]:
    """(path text or None, depth) of every category the tree places."""
    result: dict[int, tuple[str | None, int]] = {}

    def resolve(category: int) -> tuple[str | None, int]:
        if category not in result:
            title = titles.get(category)
            if category in tree.parent:
                above, depth = resolve(tree.parent[category])
                path = above + SEPARATOR + title if above and title else None
                result[category] = (path, depth + 1)
            else:
                result[category] = (title, 1)
        return result[category]

    for category in sorted(tree.nodes):
        resolve(category)
    return result


def category_table(
    tree: CategoryTree,
    schema_titles: Mapping[int, SchemaTitle],
    leaf_paths: Mapping[int, tuple[str, ...]],
    field_counts: Mapping[int, int],
) -> pa.Table:
    """One row per category that the tree, schema 3, a field or the dictionary names."""
    recovered = legacy_titles(tree, leaf_paths)
    ids = sorted(tree.nodes | set(schema_titles) | set(field_counts) | set(leaf_paths))
    titles: dict[int, str] = {}
    sources: dict[int, str] = {}
    for category in ids:
        described = schema_titles.get(category)
        if described is not None and described.title:
            titles[category], sources[category] = described.title, "schema_3"
        elif category in recovered:
            titles[category], sources[category] = recovered[category]
    paths = _paths(tree, titles)
    empty = SchemaTitle(None, None, None, None, None)
    rows = []
    for category in ids:
        described = schema_titles.get(category, empty)
        path, depth = paths.get(category, (None, None))
        rows.append(
            {
                "category_id": category,
                "title": titles.get(category),
                "title_source": sources.get(category),
                "parent_id": tree.parent.get(category),
                "path": path,
                "depth": depth,
                "showcase_order": tree.order.get(category),
                "in_tree": category in tree.nodes,
                "child_count": len(tree.children.get(category, [])),
                "field_count": field_counts.get(category, 0),
                "description": described.description,
                "notes": described.notes,
                "availability": described.availability,
                "group_type": described.group_type,
                "canonical_url": f"{CATEGORY_URL}{category}",
            }
        )
    return pa.Table.from_pylist(rows, schema=arrow_schema(UKB_CATEGORY))
