"""agentport.workflows: research workflows built on the public `LLMAdapter` contract only.

Each workflow is a subpackage (`agentport.workflows.deep_research`, ...); none imports a
backend module.
"""
