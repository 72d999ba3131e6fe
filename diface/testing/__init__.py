"""Test kit: scenarios with analytic references, to check any backend against.

>>> from diface.testing import default_scenarios
>>> [s.name for s in default_scenarios()][:3]
['scalar to scalar', 'scalar to vector', 'vector to scalar']
"""

from ._scenarios import Scenario, default_scenarios

__all__ = ["Scenario", "default_scenarios"]
