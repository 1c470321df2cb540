"""The battery language: spec files -> nodes -> a validated `Battery` -> exact prompts.

`parse` (Lark) reads rubric and policy files into nodes, `rubric` builds questions from them,
`battery` reads the manifest (YAML) and the files it names, `render` (Jinja2, sandboxed) compiles a
battery into a `core.compiled.CompiledBattery`, `lint` collects every problem and warning, `lock`
records and checks prompt hashes. The only layer that imports lark or yaml.
"""
