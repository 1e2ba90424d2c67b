"""The configuration node of the minGPT-like package (tinyformer's tests): an
attribute bag, as minGPT's mingpt/utils.py CfgNode is used by its model."""


class CfgNode:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def merge_from_dict(self, d):
        self.__dict__.update(d)
