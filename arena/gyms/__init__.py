"""Built-in gyms, one folder each, looked up by name.

Each gym folder holds ``__init__.py`` (exports ``DOMAIN``), ``world.py`` (the
seeded world generator), ``tools.py`` (the tool implementations), ``tasks.py``
(the task builders), ``policy.md`` (the rules the agent is given) and
``README.md`` (the world, the tools, the policies, the task categories).
"""
