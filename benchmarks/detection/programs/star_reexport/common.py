import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

SEED = 0
np.random.seed(SEED)
