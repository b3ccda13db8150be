"""dialeval's own evaluation methods, one plug-in package each (``dialeval.methods.<id>``).

This folder holds plug-ins only: each package exports one ``METHOD`` (a `dialeval.registry.Method`)
that an entry point of the group ``dialeval.methods`` names (pyproject.toml), exactly as an outside
package's method is registered. The registry itself is `dialeval.registry`; the API a method is
written against is `dialeval.plugin` (docs/methods.md).
"""
